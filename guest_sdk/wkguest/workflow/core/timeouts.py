"""A step's timeout per attempt: what is enforced, and how an overrun is recorded.

Guest code in an event runs synchronously on one thread, so nothing can interrupt a step's
function from inside the guest. What is enforced is the host's: right before the attempt's
function runs, the runner narrows the event's deadline to the timeout
(`Backend.narrow_deadline`, lifecycle.narrow-deadline), and lifts it right after. So the
host calls the function makes (SQL, actor calls, fetches) are cut at the deadline, and
guest code still running past it is cut by the host (a trap, as the event's budget cuts
it). Either way the attempt is recorded as timed out and retried under the step's policy:

- an attempt that ends (returns or raises) at or after its start + the timeout, by the
  host clock, is timed out: its value is discarded (a tx step's writes roll back), its
  history row's outcome is 'timed-out', and its error says so (with what it raised);
  a NonRetryable it raised still fails the step for good;
- an attempt cut by the narrowed deadline (the cut's kind, lifecycle.last_trap_info, is
  narrowed-deadline) is recorded as timed out when the next attempt begins.

A step without a timeout makes no call for any of this.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...durations import format_ms
from ...errors import CallError, FetchError, SqliteError
from ..backend import Backend, CallFailed


class StepTimedOut(TimeoutError):
    """An attempt passed its step's timeout: what a delay function gets as its error (the
    exception the attempt raised, if it raised, is its __cause__)."""


def exception(error: str, raised: Exception | None) -> StepTimedOut:
    """The error a delay function gets for a timed-out attempt (`error`: its message;
    `raised`: what the attempt raised, if it raised)."""
    e = StepTimedOut(error)
    e.__cause__ = raised
    return e


def call(db: Backend, fn: Callable[[], Any], timeout_ms: int | None) -> Any:
    """`fn()`, with the event's deadline narrowed to `timeout_ms` while it runs."""
    if timeout_ms is None:
        return fn()
    db.narrow_deadline(timeout_ms)
    try:
        return fn()
    finally:
        db.narrow_deadline(None)


def deadline(timeout_ms: int | None, started: int) -> int | None:
    """When an attempt that began at `started` times out (host clock), or None."""
    return None if timeout_ms is None else started + timeout_ms


# The kind the host gives a statement's, an actor call's or a fetch's error when it cut
# the call at the narrowed deadline (WIT sqlite.last-error, actors.last-error,
# http.last-error; CallFailed is an actor call's error as the runner's Backend raises it).
_NARROWED = "narrowed-deadline"
_KINDED = (SqliteError, CallError, CallFailed, FetchError)


def overran(db: Backend, timeout_ms: int | None, started: int,
            raised: BaseException | None = None) -> bool:
    """Whether the attempt that began at `started` has ended past its timeout: by the
    host clock, or because what it `raised` is (or was caused by) a host call cut at the
    narrowed deadline, which a host clock that tests hold still cannot tell. No host call
    for a step without one."""
    if timeout_ms is None:
        return False
    return db.now() >= started + timeout_ms or _cut_by_host(raised)


def _cut_by_host(e: BaseException | None) -> bool:
    seen = 0
    while e is not None and seen < 8:  # the chain of causes, bounded (it may loop)
        if isinstance(e, _KINDED) and e.kind == _NARROWED:
            return True
        e, seen = e.__cause__ or e.__context__, seen + 1
    return False


def message(attempt: int, timeout_ms: int | None, raised: str | None = None) -> str:
    """A timed-out attempt's error: "timed out: attempt 2 passed its timeout of 10
    seconds", then what it raised or why it was cut, if anything."""
    of = "" if timeout_ms is None else f" of {format_ms(timeout_ms)}"
    text = f"timed out: attempt {attempt} passed its timeout{of}"
    return text if raised is None else f"{text} ({raised})"
