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

from typing import Any

from ..children.calls import ChildFailed
from ..core.attempt import StepResult
from ..core.cursor import Cursor
from ..core.kinds import GROUP, STEP_FAILED, STEP_RETURNED_TAGGED, WAIT_TOOK_EVENT_TAGGED
from ..core.values import check_name, revive
from ..errors import Reordered, StepFailed
from .branches import (
    ALL,
    ALL_SETTLED,
    ANY,
    CANCEL,
    LEAVE,
    Checked,
    Child,
    Won,
    check,
    signature,
)
from .turns import Turns

_TAGGED = frozenset({STEP_RETURNED_TAGGED, WAIT_TOOK_EVENT_TAGGED})


def all_of(run: Cursor, branches: list[Any], name: str | None, losers: str) -> list[Any]:
    """Run `branches` (Step, Sleep, Wait, Child) together; their values, in order.
    Raises the StepFailed of the first branch to fail (see the module's doc)."""
    pos, checked, (decider, outcomes) = _group(run, ALL, branches, name, losers)
    if decider is not None:
        raise _failure(checked[decider], pos, outcomes[decider])
    return [_value(o) for o in outcomes]


def all_settled(run: Cursor, branches: list[Any], name: str | None) -> list[StepResult]:
    """Run `branches` together until each has settled: a StepResult per branch, in
    order (ok and value, or error and attempts)."""
    _, _, (_, outcomes) = _group(run, ALL_SETTLED, branches, name, CANCEL)
    return [_result(o) for o in outcomes]


def any_of(run: Cursor, branches: list[Any], name: str | None, losers: str) -> Won:
    """Run `branches` together until the first settles: `Won(index, value)`, or the
    StepFailed of that branch if it failed."""
    pos, checked, (decider, outcomes) = _group(run, ANY, branches, name, losers)
    out = outcomes[decider]
    if out[0] == STEP_FAILED:
        raise _failure(checked[decider], pos, out)
    return Won(decider, _value(out))


def _group(run: Cursor, call: str, branches: object, name: str | None, losers: str
           ) -> tuple[int, list[Checked], list[Any]]:
    pos = run.enter()
    try:
        checked = check(branches, run.retry, call)
        if call == ANY and not checked:
            raise ValueError("wf.any needs at least one branch")
        if losers not in (CANCEL, LEAVE):
            raise ValueError(f"losers must be {CANCEL!r} or {LEAVE!r}, not {losers!r}")
        sig = signature(call, checked) if name is None else check_name(name, "group")
    except (TypeError, ValueError) as e:
        run.refuse(str(e))
    if run.recorded(pos):
        record = run.replay(pos, GROUP, sig)
    else:
        turns = Turns(run.frontier, pos, sig, checked, call, losers,
                      lambda i: f"{run.run_id}-{pos}.{i}", run.guard)
        record = run.new(pos, turns.run)
    if len(record[1]) != len(checked):  # a name cut short hid a change of the branches
        run.stop(Reordered(
            f"the code changed a group under a running instance: position {pos} recorded "
            f"{len(record[1])} branches, and the code now gives {len(checked)}"))
    for c, out in zip(checked, record[1], strict=True):
        if c.compensate is not None and out is not None and out[0] != STEP_FAILED:
            run.completed(pos, c.name, {"compensate": c.compensate})
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
