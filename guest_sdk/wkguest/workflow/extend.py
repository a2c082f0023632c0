"""What libraries built over workflows (wkguest.cloudflare) may ask of a run beyond the
calls a workflow function makes on `wf`: the instance it belongs to, what the journal
recorded at a position, and how to park the instance for a mistake in the code.

    from wkguest.workflow import Run, extend

    def run(wf: Run, input):
        who = extend.instance_id(wf)

Each call takes the workflow function's `Run`. These are not `Run`'s methods so that `wf.`
shows users only the calls workflows are written with.
"""

from __future__ import annotations

from typing import NoReturn

from .core.instance import ATTEMPTS_AT, CREATED
from .run import Run, cursor_of


def instance_id(wf: Run) -> str:
    """The id of the instance `wf` runs (its actor's id)."""
    return cursor_of(wf).frontier.db.self_ref()[1]


def created_at(wf: Run) -> int:
    """When the instance was created: the host's clock, ms since the Unix epoch. It is
    fixed for the instance's life, so every replay reads the same value."""
    row = cursor_of(wf).frontier.db.query_row(CREATED)
    return int(row[0]) if row else 0


def attempts_at(wf: Run, position: int) -> int | None:
    """The attempts recorded for the step at `position` (a recorded step's, or one under
    way), or None if none are."""
    row = cursor_of(wf).frontier.db.query_row(ATTEMPTS_AT, (position,))
    return int(row[0]) if row and row[0] else None


def state_at(wf: Run, position: int) -> str:
    """The state of recorded position `position` as the steps route names it: "done",
    "failed", or "timed-out" (a wait whose timeout passed first)."""
    return cursor_of(wf).state_at(position)


def refuse(wf: Run, message: str) -> NoReturn:
    """A mistake in the workflow's code, found by the library: raises CodeError with
    `message`, which parks the instance (even if the function swallows it: it is the
    run's signal, raised again by its next call)."""
    cursor_of(wf).refuse(message)


__all__ = ["attempts_at", "created_at", "instance_id", "refuse", "state_at"]
