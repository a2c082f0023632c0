"""This actor's identity, the host's clock, its own end, the fuel it has burnt, who runs
it, and a deadline it sets itself (WIT interface `lifecycle`)."""

from __future__ import annotations

from wkguest import _bindings as _b
from wkguest import readonly
from wkguest.types import ActorRef

__all__ = ["NARROWED_REASON", "delete_self", "fuel_used", "holder", "last_trap",
           "narrow_deadline", "now", "self_ref"]

# What `last_trap()` says of an event whose guest code was still running at the deadline
# it set itself (`narrow_deadline`). The host spells it too (wkhost.core.instance.NARROWED):
# tests/unit/test_sdk_bindings.py checks that the two agree.
NARROWED_REASON = "the event passed the deadline it set itself (lifecycle.narrow-deadline)"


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


def fuel_used() -> int:
    """The fuel this call into the actor (its on_init, on_alarm or handle) has burnt so
    far, out of its budget (`--cpu-budget-ms`, metered as fuel). Never raises."""
    fuel: int = _b.lifecycle.fuel_used()
    return fuel


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
