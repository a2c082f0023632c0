"""`wf.now()`, `wf.random()`, `wf.uuid()` and `wf.patched(id)`: the Run's positions that
record a value instead of running anything.

The helpers take what varies once, at a new position, and record it there like a step's
result (kinds N, R, U: kinds.py), so that every replay returns the recorded value and
workflow code need not wrap them in steps. A recorded position is answered by the replay
core (`Cursor.replay`, with the reorder check: answers.py); a new one by `Frontier.record`,
written with the run's next commit (helper_records.py).

`patched(id)` answers whether a run has a change of the code. At a new position it
records a marker (kind V, named by the id) and answers True. At a recorded position that
holds anything else (the old code's next step, or the pending one), the history predates
the change: it answers False and leaves the position to the old branch, which replays it.
So an instance started before the change keeps its old branch, and one started after it
takes the new branch, under one class. The first answer for an id holds for the rest of
the run, so that several `if wf.patched(id):` of one change agree with each other.

Each is a function of the run's Cursor (cursor.py); `Run` calls it from its method of the
same name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .context import StepContext
from .cursor import Cursor
from .helper_records import random_float, uuid4
from .kinds import NOW, NOW_TAKEN, PATCH_MARKER, RANDOM, RANDOM_TAKEN, UUID, UUID_TAKEN
from .values import check_name


def step_context(run: Cursor) -> StepContext:
    """The context of the step attempt whose function is running (context.py): its
    name, count, attempt, position, key and deadline. Only inside a step's function:
    elsewhere it is a mistake in the code (CodeError: the instance parks)."""
    ctx = run.frontier.context
    if ctx is None:
        run.refuse(
            "wf.step_context is only there while a step's function runs (a step's, a step "
            "branch's); a delay function gets it as its first argument")
    return ctx


def now(run: Cursor) -> int:
    """The host's time (ms since the Unix epoch) when this position was first reached;
    the same time on every replay."""
    return int(_take(run, NOW, NOW_TAKEN, run.frontier.db.now))


def random(run: Cursor) -> float:
    """A random float in [0, 1), drawn once; the same number on every replay."""
    return float(_take(run, RANDOM, RANDOM_TAKEN, random_float))


def uuid(run: Cursor) -> str:
    """A random UUID (version 4) as text, drawn once; the same on every replay."""
    return str(_take(run, UUID, UUID_TAKEN, uuid4))


def patched(run: Cursor, change_id: str) -> bool:
    """Whether this run has the change `change_id` (see the module's docstring): True,
    recorded as a position, for a run that reaches it with no history there; False for a
    run whose history predates it (no position taken). The first answer for an id holds
    for the rest of the run.

    Raises CodeError (the instance stops) for an id that is not a valid name."""
    pos = run.at()
    _check_id(run, change_id, "patched")
    seen = run.patches
    if seen is None:
        seen = run.patches = {}
    got = seen.get(change_id)
    if got is None:
        got = seen[change_id] = _patch(run, pos, change_id)
    return got


def deprecate_patch(run: Cursor, change_id: str) -> None:
    """Retire the change `change_id` once no running instance predates it: in place of
    `if wf.patched(change_id):`, with only the new branch kept. It records nothing; a run
    whose history holds the change's marker here passes over it.

    Raises CodeError (the instance stops) for an id that is not a valid name."""
    pos = run.at()
    _check_id(run, change_id, "deprecate_patch")
    if _is_marker(run, pos, change_id):
        run.skip(pos)


def _take(run: Cursor, call: str, kind: str, draw: Callable[[], Any]) -> Any:
    pos = run.enter()
    if run.recorded(pos):
        return run.replay(pos, call, call)
    front = run.frontier
    return run.new(pos, lambda: front.record(pos, kind, call, draw()))


def _patch(run: Cursor, pos: int, change_id: str) -> bool:
    if run.recorded(pos):
        if not _is_marker(run, pos, change_id):
            return False  # the old code's entry: its branch replays it
        run.skip(pos)
        return True
    front = run.frontier
    p = front.pending
    if p is not None and p.pos == pos:
        return False  # the old code's step, sleep or wait, in progress here
    run.new(pos, lambda: front.record(pos, PATCH_MARKER, change_id, True))
    return True


def _is_marker(run: Cursor, pos: int, change_id: str) -> bool:
    return run.recorded(pos) and run.entry(pos) == (PATCH_MARKER, change_id)


def _check_id(run: Cursor, change_id: object, call: str) -> None:
    try:
        check_name(change_id, "a change id's")
    except (TypeError, ValueError) as e:
        run.refuse(f"wf.{call}({change_id!r}): {e}")
