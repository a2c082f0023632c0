"""What the runner counts in the host's metrics (WIT `metrics`), each series labelled by
the host with the actor's class (a workflow's class):

    wkguest_workflow_started_total             runs begun (a start, a continue-as-new)
    wkguest_workflow_finished_total{state}     runs finished: completed, failed,
                                               cancelled, terminated
    wkguest_workflow_parked_total              instances parked
    wkguest_workflow_updates_total{outcome}    updates accepted, and ended: completed,
                                               failed (updates/)
    wkguest_workflow_debounced_total           debounced starts folded into an instance
                                               still in its window (debounce.py)
    wkguest_workflow_step_retries_total{step}  attempts that failed and are retried
    wkguest_workflow_step_duration_seconds{step}  each attempt's time, by the host's clock
    wkguest_workflow_step_attempts{step}       the attempts a step (or branch) took to
                                               return or fail for good

What runs now and what waits are the statuses the runner publishes (core/publish.py),
which the host counts without this: `wkhost_actors_by_status{class, status}`.

Each is counted where it happens, once, as told.py tells: a replay counts nothing
again, and a cut between a write and its count may count it again in the next event (at
least once). A step's name is a label: a workflow that names its steps by data (one name
per item) runs into the host's bound of series per class, past which new series are
refused and the rest go on being counted.
"""

from __future__ import annotations

from ..backend import Backend

_NONE: tuple[tuple[str, str], ...] = ()


def started(db: Backend) -> None:
    db.count("workflow_started", _NONE)


def finished(db: Backend, state: str) -> None:
    db.count("workflow_finished", (("state", state),))


def parked(db: Backend) -> None:
    db.count("workflow_parked", _NONE)


def update(db: Backend, outcome: str) -> None:
    db.count("workflow_updates", (("outcome", outcome),))


def debounced(db: Backend) -> None:
    db.count("workflow_debounced", _NONE)


def retried(db: Backend, step: str) -> None:
    db.count("workflow_step_retries", (("step", step),))


def attempt_ended(db: Backend, step: str, ms: int) -> None:
    db.observe("workflow_step_duration_seconds", (("step", step),), max(0, ms) / 1000)


def settled(db: Backend, step: str, attempts: int) -> None:
    db.observe("workflow_step_attempts", (("step", step),), attempts)
