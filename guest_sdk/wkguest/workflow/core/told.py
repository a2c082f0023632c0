"""What the runner tells the host's log (WIT `log`): one record for each thing that went
wrong, or that an operator did, with fields to filter by.

    workflow_event   failed, cancelled, terminated, parked, bad-run, step-retried,
                     step-failed, child-failed, compensated
    run_id           the run's id
    pos, step        the position and its step's (or branch's) name
    child            a child's "class/id" (child-failed, with child_run_id, child_state)
    attempt          the attempt that failed (step-retried, step-failed)
    next_attempt_at  when the next attempt may run (step-retried), host clock ms
    error            why (one line; a failed attempt's traceback is in its history)

Warning for what wants someone's attention (failed, parked, bad-run, step-failed,
child-failed), info for the rest. The host logs them under `wkhost.guest.<class>` with
the actor's class, id and event; it knows nothing of workflows. What goes well (a
workflow completed, a step returned) is told nothing, and costs nothing here.

Each is told where it happens, once: a replay, which passes the same failures again,
tells nothing (a step's failure is told by the attempt that failed, a child's by the
notice that brought it). A cut between a record and the write it tells of may tell it
again in the next event: records are at least once.
"""

from __future__ import annotations

from typing import Any

from ..backend import Backend

WARNING, INFO = "warning", "info"
_RUN_ID = "SELECT run_id FROM _wk_wf"


def tell(db: Backend, level: str, message: str, what: str, **fields: Any) -> None:
    """One record: `what` is its `workflow_event`."""
    db.log(level, message, {"workflow_event": what, **fields})


def run_id(rows: Any) -> str | None:
    """The instance's run id, read after a write (so nothing carried is pulled ahead of
    the write it rides with): for what is told outside a run (a finish, a park)."""
    got = rows(_RUN_ID)
    return None if not got else str(got[0][0])


def finished(db: Backend, rows: Any, state: str, error: str | None) -> None:
    """The instance finished as `state` (nothing is told of a completed one)."""
    if state == "completed":
        return
    level = WARNING if state == "failed" else INFO
    said = f": {error}" if error else ""
    tell(db, level, f"workflow {state}{said}", state, run_id=run_id(rows), error=error)


def parked(db: Backend, rows: Any, reason: str) -> None:
    tell(db, WARNING, f"workflow parked: {reason}", "parked", run_id=run_id(rows),
         error=reason)


def bad_run(db: Backend, rows: Any, reason: str, bad: int, most: int) -> None:
    """A run ended without the function returning; the next run retries it, until
    `most` of them in a row park the instance."""
    tell(db, WARNING, f"run {bad} of at most {most} in a row ended without the workflow "
         f"returning: {reason}", "bad-run", run_id=run_id(rows), error=reason,
         bad_runs=bad)


def step_retried(db: Backend, run: str, pos: int, name: str, attempt: int, error: str,
                 next_at: int) -> None:
    tell(db, INFO, f"step {name!r} (position {pos}) attempt {attempt} failed, retried: "
         f"{error}", "step-retried", run_id=run, pos=pos, step=name, attempt=attempt,
         next_attempt_at=next_at, error=error)


def step_failed(db: Backend, run: str, pos: int, name: str, attempts: int,
                error: str) -> None:
    tell(db, WARNING, f"step {name!r} (position {pos}) failed after {attempts} "
         f"attempt(s): {error}", "step-failed", run_id=run, pos=pos, step=name,
         attempt=attempts, error=error)


def child_failed(db: Backend, rows: Any, child: str, child_run: str, state: str,
                 error: str | None) -> None:
    """Child `child` ("class/id") finished as `state`, not completed: its notice came."""
    tell(db, WARNING, f"child {child} {state}" + (f": {error}" if error else ""),
         "child-failed", run_id=run_id(rows), child=child, child_run_id=child_run,
         child_state=state, error=error)


def compensated(db: Backend, run: str, count: int, failed: list[str]) -> None:
    """The run's `count` compensations ran (`failed`: the final error of each that
    failed), before its finish."""
    level = WARNING if failed else INFO
    tell(db, level, f"{count} compensation(s) ran, {len(failed)} failed"
         + (": " + "; ".join(failed) if failed else ""), "compensated", run_id=run,
         compensations=count, failed=len(failed))
