"""Saga compensation: a step's `compensate=`, run in reverse when the workflow fails.

    wf.step("reserve", reserve, compensate=release)
    wf.step("charge", charge, compensate=workflow.Compensation(refund, attempts=10))

A step that completed registers its compensation (a callable taking no argument, or a
`Compensation` with its own retry settings), in the order the steps are reached: on
every replay too, so each run knows the same list. When the workflow fails with its own
failure (a StepFailed escaping the function, `wf.fail`) or is cancelled with
compensation, the runner runs them newest first (hooks.py), as ordinary steps of the
same run named `compensate:<step>` at the positions after the failure: each is recorded,
retried with backoff under its own settings and replayed like any step, so a crash in
the middle resumes it and a compensation recorded as done never runs again. Reverse
order undoes the newest work first, as a stack; it is deterministic (the order in which
the code reached the steps), and for sequential code it is Cloudflare's reverse order of
step start. A compensation that fails for good is recorded and reported in the error,
and the others still run. Failures that are not the workflow's own park the instance
and compensate nothing.

A cancel with compensation (its mark `_wk_wf_saga`, cancelling.py) marks the instance
`compensating`; the next run replays the function up to its first unrecorded position,
where its frontier refuses any new work (`CancelStop`), records that position, and runs
the compensations from there. Later runs hide the positions from there on from the
function, so it stops at the same place while the compensations replay after it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from ...durations import Duration
from ..core.config import Delay, Retry, StepOptions
from ..core.cursor import Cursor
from ..core.policy import override
from ..core.tx import Tables, tables_of
from ..core.values import check_name
from ..errors import Suspend, WorkflowSignal

PREFIX = "compensate:"
COMPENSATING = "compensating"  # the state of an instance running its compensations
_OPTIONS = ("attempts", "backoff_ms", "factor", "max_backoff_ms", "limit", "delay",
            "backoff", "timeout", "timeout_ms")


class Compensation:
    """A compensation with its own step options: `compensate=Compensation(g,
    attempts=10)`. The retry options are a step's (any of them, core/policy.py; the rest from
    the Config); `tx=True` (or a `Tables`) makes it a tx step: `g(db)` writes the
    instance's own tables in one transaction with its record (core/tx.py), so a crash never
    repeats it. They are checked when a step that carries it completes (CodeError,
    naming them)."""

    __slots__ = ("fn", "opts")

    def __init__(self, fn: Callable[..., Any], *, attempts: int | None = None,
                 backoff_ms: int | None = None, factor: float | None = None,
                 max_backoff_ms: int | None = None, limit: int | None = None,
                 delay: Delay | None = None, backoff: str | None = None,
                 timeout: Duration | None = None, timeout_ms: int | None = None,
                 tx: bool | Tables = False) -> None:
        self.fn = fn
        given = (attempts, backoff_ms, factor, max_backoff_ms, limit, delay, backoff,
                 timeout, timeout_ms)
        self.opts: dict[str, Any] = {k: v for k, v in zip(_OPTIONS, given, strict=True)
                                     if v is not None}
        if tx is not False:
            self.opts["tx"] = tx

    def __repr__(self) -> str:
        opts = "".join(f", {k}={v!r}" for k, v in self.opts.items())
        return f"Compensation({self.fn!r}{opts})"


# A registered compensation: the step's name, the function, its step options (retry, tx).
Entry = tuple[str, Callable[..., Any], dict[str, Any]]


class CancelStop(WorkflowSignal):
    """A run cancelled with compensation reached new work: the function stops there."""


class Compensations:
    """The compensations that a run's completed steps registered: the run's cursor's
    `completions` hook (core/cursor.py)."""

    __slots__ = ("run", "entries")

    def __init__(self, run: Cursor) -> None:
        self.run = run
        self.entries: list[Entry] = []  # in the order the steps completed

    def note(self, pos: int, name: str, opts: Any) -> None:
        """Step `name` at `pos` completed with options `opts`; keep its compensation.
        Raises CodeError (the instance parks) for a compensate= that cannot work."""
        g = opts.get("compensate")
        if g is None:
            return
        try:
            entry = _entry(name, g, self.run.retry)
        except (TypeError, ValueError) as e:
            self.run.refuse(f"wf.step({name!r}): compensate: {e}")
        self.entries.append(entry)  # positions repeat in a group's branches: the call order

    def run_all(self) -> tuple[int, list[str]]:
        """Run the registered compensations, newest first, as steps from the current
        position. Returns how many there were and the final error of each that failed.
        A signal (a backoff's Suspend, a budget) propagates: the next run goes on."""
        entries = list(reversed(self.entries))
        failed = []
        for name, fn, opts in entries:
            # a copy: the step takes its options apart
            got = self.run.try_step(PREFIX + name, fn, cast(StepOptions, dict(opts)))
            if not got.ok:
                failed.append(f"step {PREFIX + name!r} failed after {got.attempts} "
                              f"attempt(s): {got.error}")
        return len(entries), failed


def _entry(name: str, g: object, base: Retry) -> Entry:
    check_name(PREFIX + name, "the compensation's step")  # the name its step is given
    if isinstance(g, Compensation):
        fn, opts = g.fn, g.opts
    else:
        fn, opts = g, {}  # type: ignore[assignment]
    if not callable(fn):
        raise TypeError(f"must be a callable taking no argument or a "
                        f"workflow.Compensation, not {fn!r} ({type(fn).__name__})")
    retry = {k: v for k, v in opts.items() if k != "tx"}
    override(base, retry)  # raises naming a bad option
    tables_of(opts.get("tx", False), False)
    return name, fn, opts


def outcome(count: int, failed: list[str], error: str | None) -> str | None:
    """The finished instance's error: the original failure (None for a cancel), then
    which compensations failed, if any."""
    if failed:
        what = f"{len(failed)} of {count} compensation(s) failed: " + "; ".join(failed)
        return f"{error}; {what}" if error else f"cancelled with compensation; {what}"
    if error and count:
        return f"{error} (compensated: {count} compensation(s) ran)"
    return error


def compensating(s: WorkflowSignal) -> WorkflowSignal:
    """A compensation's Suspend (a backoff, the budget) reports the state compensating."""
    if isinstance(s, Suspend) and s.state == "running":
        return Suspend(COMPENSATING, s.wake_at, s.waiting_for)
    return s
