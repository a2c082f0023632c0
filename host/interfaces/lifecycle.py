"""The `lifecycle` interface: who am I, what time is it, why my last event trapped, and
delete me."""

from __future__ import annotations

from typing import Any

from .ports import E, Lifecycle
from .records import record


def register(root: Any, guard: Any, host: Lifecycle[E]) -> None:
    current, now_ms = host.current_event, host.now_ms

    def self_ref(_store: Any) -> Any:
        ref = current().slot.ref
        return record(**{"class": ref.cls, "id": ref.id})

    def now(_store: Any) -> int:
        return now_ms()

    def delete_self(_store: Any) -> None:
        current().delete_requested = True

    def last_trap(_store: Any) -> str | None:
        ev = current()
        ev.trap_read = True  # kept until this event ends without a trap (core/settle.py)
        return ev.slot.last_trap

    with root.add_instance("wk:host/lifecycle@0.1.0") as iface:
        iface.add_func("self-ref", guard(self_ref))
        iface.add_func("now", guard(now))
        iface.add_func("delete-self", guard(delete_self))
        iface.add_func("last-trap", guard(last_trap))
