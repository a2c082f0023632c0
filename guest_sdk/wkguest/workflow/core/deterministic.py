"""`wf.now()`, `wf.random()`, `wf.uuid()` and `wf.patched(id)`: the Run's positions that
record a value instead of running anything.

The helpers take what varies once, at a new position, and record it there like a step's
result (kinds N, R, U: kinds.py), so that every replay returns the recorded value and
workflow code need not wrap them in steps. A recorded position is answered by the replay
core (`Run._replay_recorded`, with the reorder check); a new one by `Frontier.record`,
written with the run's next commit (helper_records.py).

`patched(id)` answers whether a run has a change of the code. At a new position it
records a marker (kind V, named by the id) and answers True. At a recorded position that
holds anything else (the old code's next step, or the pending one), the history predates
the change: it answers False and leaves the position to the old branch, which replays it.
So an instance started before the change keeps its old branch, and one started after it
takes the new branch, under one class. The first answer for an id holds for the rest of
the run, so that several `if wf.patched(id):` of one change agree with each other.

`Helpers` is a mixin of `Run`: its methods use the replay core's state through `_Core`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn, Protocol

from ..errors import CodeError, WorkflowSignal
from .context import StepContext
from .frontier import Frontier
from .helper_records import random_float, uuid4
from .journal import Journal
from .kinds import NOW, NOW_TAKEN, PATCH_MARKER, RANDOM, RANDOM_TAKEN, UUID, UUID_TAKEN
from .values import check_name


class _Core(Protocol):
    """The part of `Run` the helpers use."""

    _pos: int
    _kinds: list[str]
    _journal: Journal
    _front: Frontier
    _patches: dict[str, bool] | None
    stopped: WorkflowSignal | None

    def _enter(self) -> int: ...

    def _new(self, pos: int, work: Callable[[], Any]) -> Any: ...

    def _replay(self, pos: int, call: str, name: str) -> Any: ...


class Helpers:
    __slots__ = ()

    @property
    def step_context(self: _Core) -> StepContext:
        """The context of the step attempt whose function is running (context.py): its
        name, count, attempt, position, key and deadline. Only inside a step's function:
        elsewhere it is a mistake in the code (CodeError: the instance parks)."""
        ctx = self._front.context
        if ctx is None:
            _no_context(self)
        return ctx

    # -- deterministic helpers -----------------------------------------------------

    def now(self: _Core) -> int:
        """The host's time (ms since the Unix epoch) when this position was first
        reached; the same time on every replay."""
        return int(_take(self, NOW, NOW_TAKEN, self._front.db.now))

    def random(self: _Core) -> float:
        """A random float in [0, 1), drawn once; the same number on every replay."""
        return float(_take(self, RANDOM, RANDOM_TAKEN, random_float))

    def uuid(self: _Core) -> str:
        """A random UUID (version 4) as text, drawn once; the same on every replay."""
        return str(_take(self, UUID, UUID_TAKEN, uuid4))

    # -- versioning ----------------------------------------------------------------

    def patched(self: _Core, change_id: str) -> bool:
        """Whether this run has the change `change_id` (see the module's docstring):
        True, recorded as a position, for a run that reaches it with no history there;
        False for a run whose history predates it (no position taken). The first answer
        for an id holds for the rest of the run.

        Raises CodeError (the instance stops) for an id that is not a valid name."""
        pos = self._enter()
        _check_id(self, change_id, "patched")
        seen = _answers(self)
        got = seen.get(change_id)
        if got is None:
            got = seen[change_id] = _patch(self, pos, change_id)
        return got

    def deprecate_patch(self: _Core, change_id: str) -> None:
        """Retire the change `change_id` once no running instance predates it: in place
        of `if wf.patched(change_id):`, with only the new branch kept. It records nothing;
        a run whose history holds the change's marker here passes over it.

        Raises CodeError (the instance stops) for an id that is not a valid name."""
        pos = self._enter()
        _check_id(self, change_id, "deprecate_patch")
        if _is_marker(self, pos, change_id):
            self._pos = pos + 1


def _take(run: _Core, call: str, kind: str, draw: Callable[[], Any]) -> Any:
    pos = run._enter()
    if pos < len(run._kinds):
        return run._replay(pos, call, call)
    front = run._front
    return run._new(pos, lambda: front.record(pos, kind, call, draw()))


def _answers(run: _Core) -> dict[str, bool]:
    seen = run._patches
    if seen is None:
        seen = run._patches = {}
    return seen


def _patch(run: _Core, pos: int, change_id: str) -> bool:
    if pos < len(run._kinds):
        if not _is_marker(run, pos, change_id):
            return False  # the old code's entry: its branch replays it
        run._pos = pos + 1
        return True
    front = run._front
    p = front.pending
    if p is not None and p.pos == pos:
        return False  # the old code's step, sleep or wait, in progress here
    run._new(pos, lambda: front.record(pos, PATCH_MARKER, change_id, True))
    return True


def _is_marker(run: _Core, pos: int, change_id: str) -> bool:
    return (pos < len(run._kinds) and run._kinds[pos] == PATCH_MARKER
            and run._journal.name(pos) == change_id)


def _check_id(run: _Core, change_id: object, call: str) -> None:
    try:
        check_name(change_id, "a change id's")
    except (TypeError, ValueError) as e:
        run.stopped = CodeError(f"wf.{call}({change_id!r}): {e}")
        raise run.stopped from None


def _no_context(run: _Core) -> NoReturn:
    run.stopped = CodeError(
        "wf.step_context is only there while a step's function runs (a step's, a step "
        "branch's); a delay function gets it as its first argument")
    raise run.stopped
