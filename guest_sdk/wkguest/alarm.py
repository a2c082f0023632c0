"""The actor's one durable alarm (WIT interface `alarm`).

    alarm.set(lifecycle.now() + 60_000)     # on_alarm runs in about a minute

Delivered at least once, at or after its time. After `on_alarm` returns normally the host
clears the alarm, unless the event set or cleared it itself (so re-arming works).
"""

from __future__ import annotations

from wkguest import _bindings as _b
from wkguest import readonly
from wkguest.errors import AlarmError

__all__ = ["clear", "get", "set"]


def set(at_ms: int) -> None:  # shadows the builtin on purpose: the WIT name
    """Set the alarm to `at_ms` (ms since the Unix epoch, host clock), replacing any other.

    Raises AlarmError (the host refused), ValueError (a negative time), ReadOnlyError
    (while code that may only read runs: `wkguest.readonly`).
    """
    readonly.refuse("setting the alarm")
    if at_ms < 0:
        raise ValueError(f"alarm time must be >= 0, got {at_ms}")
    try:
        _b.alarm.set(int(at_ms))
    except _b.Err as e:
        raise AlarmError(str(e.value)) from None


def get() -> int | None:
    """The pending alarm's time, or None. Never raises."""
    at: int | None = _b.alarm.get()
    return at


def clear() -> None:
    """Remove the pending alarm, if any. Raises AlarmError (the host refused),
    ReadOnlyError (while code that may only read runs: `wkguest.readonly`)."""
    readonly.refuse("clearing the alarm")
    try:
        _b.alarm.clear()
    except _b.Err as e:
        raise AlarmError(str(e.value)) from None
