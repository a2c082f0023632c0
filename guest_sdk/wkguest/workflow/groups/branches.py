"""The branches of a group (`wf.all`, `wf.all_settled`, `wf.any`): what each one is.

    a, b = wf.all([Step("charge", charge), Step("ship", ship, attempts=3)])
    won = wf.any([Wait("approved", DAY_MS), Sleep("deadline", HOUR_MS)])

A branch is a description, not a call: the group decides when it runs. Each is one
primitive (a step, a sleep, a wait for an event, a child workflow); a sequence of them
that must run as one branch is a child workflow. Each branch is checked when the group
is reached, and a mistake (a bad name, a bad option, not a branch) is the code's, so the
instance parks saying which branch (CodeError).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ...durations import Duration
from ..core.config import Retry
from ..core.moments import check_duration
from ..core.policy import override
from ..core.values import check_ms, check_name

MAX_BRANCHES = 1000
# The group calls (calls.py), as their entries' names begin.
ALL, ALL_SETTLED, ANY = "all", "all_settled", "any"
# Losers: what a group does with the children of branches it no longer waits for.
CANCEL, LEAVE = "cancel", "leave"


@dataclass(frozen=True)
class Won:
    """What `wf.any` returns: the index of the branch that finished first, and its value
    (`index, value = wf.any(...)` unpacks it)."""

    index: int
    value: Any

    def __iter__(self) -> Iterator[Any]:
        return iter((self.index, self.value))


@dataclass(frozen=True, init=False)
class Step:
    """A step branch: `f()` (or `f(key)` with `keyed=True`: the branch's idempotency key),
    with the step options of `wf.step` (policy.OPTIONS, and compensate); `wf.step_context`
    is its context while `f` runs. A tx step is not a branch: give it a position of its
    own."""

    name: str
    f: Callable[..., Any]
    keyed: bool = False
    opts: dict[str, Any] = field(default_factory=dict)

    def __init__(self, name: str, f: Callable[..., Any], *, keyed: bool = False,
                 **opts: Any) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "f", f)
        object.__setattr__(self, "keyed", keyed)
        object.__setattr__(self, "opts", opts)


@dataclass(frozen=True)
class Sleep:
    """A sleep branch of `ms`, counted from when the group is first reached: an int of
    milliseconds, or any duration ("10 seconds", a timedelta), as `wf.sleep` takes."""

    name: str
    ms: Duration


@dataclass(frozen=True, init=False)
class Wait:
    """A branch that waits for event `name`, as `wf.wait_for_event`: its payload, or None
    once `timeout` (counted from when the group is first reached) has passed: an int of
    milliseconds or any duration ("1 day"); or `timeout_ms=`, an int."""

    name: str
    timeout: Duration | None
    timeout_ms: int | None

    def __init__(self, name: str, timeout: Duration | None = None, *,
                 timeout_ms: int | None = None) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "timeout", timeout)
        object.__setattr__(self, "timeout_ms", timeout_ms)


@dataclass(frozen=True)
class Child:
    """A child workflow branch: instance `id` of workflow class `cls`, started with
    `input` (as `wf.child`); its output, or its failure."""

    cls: str
    id: str
    input: Any = None
    detach: bool = False

    @property
    def name(self) -> str:
        return f"child {self.cls}/{self.id}"


Branch = Step | Sleep | Wait | Child


class Checked(NamedTuple):
    """A branch as the group runs it."""

    branch: Branch
    name: str  # as recorded in its row
    retry: Retry | None  # a step's or a child start's
    compensate: Any


def check(branches: object, base: Retry, call: str) -> list[Checked]:
    """Each branch, checked. Raises TypeError or ValueError naming the branch."""
    if not isinstance(branches, (list, tuple)):
        raise TypeError(f"wf.{call} takes a list of branches, not {type(branches).__name__}")
    if len(branches) > MAX_BRANCHES:
        raise ValueError(f"wf.{call} takes at most {MAX_BRANCHES} branches, "
                         f"not {len(branches)}")
    out = []
    for i, b in enumerate(branches):
        try:
            out.append(_check_one(b, base))
        except (TypeError, ValueError) as e:
            raise type(e)(f"wf.{call}: branch {i}: {e}") from None
    return out


def _check_one(b: object, base: Retry) -> Checked:
    if isinstance(b, Step):
        check_name(b.name, "step")
        if not callable(b.f):
            raise TypeError(f"step {b.name!r}: f must be callable")
        opts = dict(b.opts)
        compensate = opts.pop("compensate", None)
        if "tx" in opts:
            raise TypeError(f"step {b.name!r}: a tx step cannot be a branch")
        return Checked(b, b.name, override(base, opts), compensate)
    if isinstance(b, Sleep):
        check_name(b.name, "sleep")
        check_duration(b.ms, f"sleep {b.name!r}")
        return Checked(b, b.name, None, None)
    if isinstance(b, Wait):
        check_name(b.name, "event")
        what = f"the wait for {b.name!r}: its timeout"
        if (b.timeout is None) == (b.timeout_ms is None):
            raise TypeError(f"{what}: give one, as timeout= (a duration) or timeout_ms= "
                            "(an int)")
        if b.timeout_ms is None:
            check_duration(b.timeout, what)
        else:
            check_ms(b.timeout_ms, f"{what} timeout_ms")
            b = Wait(b.name, b.timeout_ms)  # the group reads its timeout from `timeout`
        return Checked(b, b.name, None, None)
    if isinstance(b, Child):
        check_name(b.cls, "class")
        check_name(b.id, "child id")
        return Checked(b, check_name(b.name, "child"), base, None)
    raise TypeError(f"{b!r} is not a branch (Step, Sleep, Wait or Child)")


def signature(call: str, checked: list[Checked]) -> str:
    """The group's recorded name: the call and its branches' names, so that a deploy
    that changes a group under a running instance is seen as a reorder. Cut to the
    longest name a position keeps (each branch's row keeps its own name, checked too)."""
    text = f"{call}({','.join(c.name for c in checked)})"
    return text if len(text) <= 256 else text[:255] + "…"
