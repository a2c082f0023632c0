"""Groups of branches: `wf.all`, `wf.all_settled` and `wf.any`.

    charged, shipped = wf.all([Step("charge", charge), Step("ship", ship)])
    results = wf.all_settled([Step(f"notify {u}", notify_fn(u)) for u in users])
    won = wf.any([Wait("approved", DAY_MS), Sleep("deadline", HOUR_MS)])
    if won.index == 1: ...

A group takes one position of the journal, whatever its size. Its results come back in
the order the branches are given, never in the order they finished: each branch's place
is its index in the list, fixed by the code, and the group's entry records every
outcome by that index, so a replay rebuilds the same list from the one entry (no
gather that reorders on recovery). How the branches take turns while the group is open
is turns.py's.

- `all`: every branch's value, in order. All or error: the first branch to fail for
  good (a step out of attempts, a child that failed) ends the group, and its StepFailed
  is raised, with that branch's name; the branches left are abandoned (a step not
  attempted again, a wait that takes nothing more, a child cancelled unless
  `losers="leave"` or detached).
- `all_settled`: a StepResult per branch, in order, once every branch has settled;
  nothing is raised for a failed branch.
- `any`: the first branch to settle wins: `Won(index, value)`, or its StepFailed if it
  failed. The winner is recorded, so every replay gets the same one. The losers are
  abandoned as `all`'s are, their children cancelled unless `losers="leave"`.

A wait that times out settles with None, as `wait_for_event` returns it. Step branches
with `compensate=` register their compensation in branch order, for the saga
(saga/compensations.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from ..children.calls import ChildFailed
from ..core.config import Retry
from ..core.frontier import Frontier
from ..core.kinds import GROUP, STEP_FAILED, STEP_RETURNED_TAGGED, WAIT_TOOK_EVENT_TAGGED
from ..core.values import check_name, revive
from ..errors import CodeError, Reordered, StepFailed, WorkflowSignal
from .branches import (
    ALL,
    ALL_SETTLED,
    ANY,
    CANCEL,
    LEAVE,
    Checked,
    Child,
    StepResult,
    Won,
    check,
    signature,
)
from .turns import GroupFront

_TAGGED = frozenset({STEP_RETURNED_TAGGED, WAIT_TOOK_EVENT_TAGGED})


class _Core(Protocol):
    """The part of `Run` the groups use."""

    _kinds: list[str]
    _front: Frontier
    _retry: Retry
    run_id: str
    stopped: WorkflowSignal | None

    def _enter(self) -> int: ...

    def _new(self, pos: int, work: Callable[[], Any]) -> Any: ...

    def _replay(self, pos: int, call: str, name: str) -> Any: ...

    def _no_nesting(self, fn: Callable[..., Any]) -> Callable[..., Any]: ...

    def _note_compensation(self, pos: int, name: str, opts: Any) -> None: ...


class Groups:
    __slots__ = ()

    def all(self: _Core, branches: list[Any], *, name: str | None = None,
            losers: str = CANCEL) -> list[Any]:
        """Run `branches` (Step, Sleep, Wait, Child) together; their values, in order.
        Raises the StepFailed of the first branch to fail (see the module's doc)."""
        pos, checked, (decider, outcomes) = _group(self, ALL, branches, name, losers)
        if decider is not None:
            raise _failure(checked[decider], pos, outcomes[decider])
        return [_value(o) for o in outcomes]

    def all_settled(self: _Core, branches: list[Any], *, name: str | None = None
                    ) -> list[StepResult]:
        """Run `branches` together until each has settled: a StepResult per branch, in
        order (ok and value, or error and attempts)."""
        _, _, (_, outcomes) = _group(self, ALL_SETTLED, branches, name, CANCEL)
        return [_result(o) for o in outcomes]

    def any(self: _Core, branches: list[Any], *, name: str | None = None,
            losers: str = CANCEL) -> Won:
        """Run `branches` together until the first settles: `Won(index, value)`, or the
        StepFailed of that branch if it failed."""
        pos, checked, (decider, outcomes) = _group(self, ANY, branches, name, losers)
        out = outcomes[decider]
        if out[0] == STEP_FAILED:
            raise _failure(checked[decider], pos, out)
        return Won(decider, _value(out))


def _group(run: _Core, call: str, branches: object, name: str | None, losers: str
           ) -> tuple[int, list[Checked], list[Any]]:
    pos = run._enter()
    try:
        checked = check(branches, run._retry, call)
        if call == ANY and not checked:
            raise ValueError("wf.any needs at least one branch")
        if losers not in (CANCEL, LEAVE):
            raise ValueError(f"losers must be {CANCEL!r} or {LEAVE!r}, not {losers!r}")
        sig = signature(call, checked) if name is None else check_name(name, "group")
    except (TypeError, ValueError) as e:
        run.stopped = CodeError(str(e))
        raise run.stopped from None
    if pos < len(run._kinds):
        record = run._replay(pos, GROUP, sig)
    else:
        front = run._front
        gf = GroupFront(front, pos, sig, checked, call, losers,
                        lambda i: f"{run.run_id}-{pos}.{i}", run._no_nesting)
        record = run._new(pos, gf.run)
    if len(record[1]) != len(checked):  # a name cut short hid a change of the branches
        run.stopped = Reordered(
            f"the code changed a group under a running instance: position {pos} recorded "
            f"{len(record[1])} branches, and the code now gives {len(checked)}")
        raise run.stopped
    for c, out in zip(checked, record[1], strict=True):
        if c.compensate is not None and out is not None and out[0] != STEP_FAILED:
            run._note_compensation(pos, c.name, {"compensate": c.compensate})
    return pos, checked, record


def _value(out: list[Any]) -> Any:
    kind, result = out
    return revive(result) if kind in _TAGGED else result


def _result(out: list[Any]) -> StepResult:
    if out[0] == STEP_FAILED:
        error, attempts = out[1]
        return StepResult(False, None, error, attempts)
    return StepResult(True, _value(out))


def _failure(c: Checked, pos: int, out: list[Any]) -> StepFailed:
    error, attempts = out[1]
    b = c.branch
    if isinstance(b, Child):
        return ChildFailed(b.cls, b.id, error, pos)
    return StepFailed(c.name, pos, error, attempts)
