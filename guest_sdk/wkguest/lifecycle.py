"""This actor's identity, the host's clock, its own end, the fuel it has burnt, who runs
it, a deadline it sets itself, and why its last event trapped (WIT interface
`lifecycle`)."""

from __future__ import annotations

import enum
import traceback
from dataclasses import dataclass

from wkguest import _bindings as _b
from wkguest import readonly
from wkguest.reasons import NARROWED_REASON
from wkguest.types import ActorRef

__all__ = ["NARROWED_REASON", "ReportedException", "TrapInfo", "TrapKind", "delete_self",
           "fuel_used", "holder", "last_trap", "last_trap_info", "narrow_deadline", "now",
           "now_and_fuel", "report_exception", "self_ref"]

# NARROWED_REASON (wkguest.reasons) is what `last_trap()` says of an event whose guest code
# was still running at the deadline it set itself (`narrow_deadline`). Text for people:
# code tells that cut by `last_trap_info().kind is TrapKind.NARROWED_DEADLINE`.


class TrapKind(enum.Enum):
    """What cut or trapped a call into the actor (WIT `lifecycle.trap-kind`)."""

    CPU = "cpu"                              # its CPU budget (--cpu-budget-ms)
    WALL = "wall"                            # its wall-clock budget (--wall-budget-ms)
    NARROWED_DEADLINE = "narrowed-deadline"  # the deadline it set itself (narrow_deadline)
    MEMORY = "memory"                        # out of memory at the host's cap
    OUTPUT_FLOOD = "output-flood"            # it wrote past the output cap, then trapped
    GUEST = "guest"                          # its own: an uncaught exception, exit, abort
    HOST = "host"                            # a host function failed under it
    UNKNOWN = "unknown"                      # kept by a wkhost that kept only the text


@dataclass(frozen=True)
class ReportedException:
    """The exception the actor reported as it trapped (`report_exception`)."""

    type_name: str
    message: str
    traceback: str


@dataclass(frozen=True)
class TrapInfo:
    """Why the actor's last event that trapped or was cut ended: `message` is
    `last_trap()`'s text, `exception` what it reported before it trapped, if anything."""

    kind: TrapKind
    message: str
    exception: ReportedException | None


def self_ref() -> ActorRef:
    """This actor's class and id. Never raises."""
    ref = _b.lifecycle.self_ref()
    return ActorRef(ref.class_, ref.id)


def now() -> int:
    """The host's clock in ms since the Unix epoch. Use this, not `time.time()`: tests may
    move the host clock, and the WASI clock is not what alarms are scheduled by.
    Never raises."""
    ms: int = _b.lifecycle.now()
    return ms


def delete_self() -> None:
    """Delete this actor when the current event ends: its database and alarm go, and its
    next event creates it anew (running `on_init` again). Raises ReadOnlyError while code
    that may only read runs (`wkguest.readonly`)."""
    readonly.refuse("deleting the actor")
    _b.lifecycle.delete_self()


def last_trap() -> str | None:
    """Why this actor's last event that trapped or was cut ended (one line, e.g. "the
    event used its CPU budget (--cpu-budget-ms)"), or None. The host keeps it, across
    restarts too, until an event that asked for it ends without a trap. Never raises."""
    reason: str | None = _b.lifecycle.last_trap()
    return reason


def last_trap_info() -> TrapInfo | None:
    """`last_trap()`'s reason as a value: its kind, its message, and the exception the
    actor reported before it trapped. Kept and forgotten with `last_trap()`'s. Never
    raises."""
    info = _b.lifecycle.last_trap_info()
    if info is None:
        return None
    e = info.exception
    reported = None if e is None else ReportedException(e.type_name, e.message, e.traceback)
    return TrapInfo(TrapKind[info.kind.name], info.message, reported)


# What is sent of a reported exception, in characters: the host keeps no more
# (host/traps.py), and a smaller string crosses the boundary faster.
_MAX_TYPE_NAME, _MAX_MESSAGE, _MAX_TRACEBACK = 256, 4096, 16384


def report_exception(exc: BaseException) -> None:
    """Tell the host the exception this call is about to trap on, to keep with the trap
    (`last_trap_info().exception`). `wkguest.export` reports an uncaught one itself.
    Never raises: a failure to report (out of memory) leaves the trap as it was."""
    try:
        cls = type(exc)
        name = cls.__qualname__ if cls.__module__ == "builtins" \
            else f"{cls.__module__}.{cls.__qualname__}"
        text = "".join(traceback.format_exception(exc))
        _b.lifecycle.report_exception(name[:_MAX_TYPE_NAME], _message(exc),
                                      text[-_MAX_TRACEBACK:])
    except Exception:  # the trap that follows must stay the guest's own
        pass


def _message(exc: BaseException) -> str:
    try:
        return str(exc)[:_MAX_MESSAGE]
    except Exception:  # a __str__ that raises
        return f"<{type(exc).__name__}: its str() failed>"


def fuel_used() -> int:
    """The fuel this call into the actor (its on_init, on_alarm or handle) has burnt so
    far, out of its budget (`--cpu-budget-ms`, metered as fuel). Never raises."""
    fuel: int = _b.lifecycle.fuel_used()
    return fuel


def now_and_fuel() -> tuple[int, int]:
    """`now()` and `fuel_used()` in one call to the host: (ms since the Unix epoch, the
    fuel this call into the actor has burnt so far). Never raises."""
    now, fuel = _b.lifecycle.now_and_fuel()
    return int(now), int(fuel)


def holder() -> str:
    """Who runs this actor now, to show an operator: today the host process, e.g.
    "process 0 of 4 (pid 1234)". Never raises."""
    name: str = _b.lifecycle.holder()
    return name


def narrow_deadline(within_ms: int | None) -> None:
    """Until the next call, bound this call into the actor by `within_ms` from now, as
    well as by its own deadline (a longer bound changes nothing); None lifts the bound.
    Each on_init, on_alarm and handle starts without it.

    Host calls cut by it fail with their deadline errors, which name
    "lifecycle.narrow-deadline": SQL "interrupted: ...", fetch "timeout: ...", an actor
    call "timeout: ...". After such an error the code runs on (only the event's own
    deadline traps it) while host calls stay bounded. Code still running at it traps,
    and `last_trap()` says NARROWED_REASON. Never raises."""
    _b.lifecycle.narrow_deadline(within_ms)
