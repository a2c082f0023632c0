"""This actor's identity, the host's clock, and its own end (WIT interface `lifecycle`)."""

from __future__ import annotations

from wkguest import _bindings as _b
from wkguest.types import ActorRef

__all__ = ["delete_self", "last_trap", "now", "self_ref"]


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
    next event creates it anew (running `on_init` again). Never raises."""
    _b.lifecycle.delete_self()


def last_trap() -> str | None:
    """Why this actor's last event that trapped or was cut ended (one line, e.g. "the
    event used its CPU budget (--cpu-budget-ms)"), or None. The host keeps it, across
    restarts too, until an event that asked for it ends without a trap. Never raises."""
    reason: str | None = _b.lifecycle.last_trap()
    return reason
