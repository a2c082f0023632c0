"""The `lifecycle` interface: who am I, what time is it, why my last event trapped, how
much fuel I have burnt, who runs me, and delete me."""

from __future__ import annotations

from typing import Any

from wasmtime import Store

from .ports import E, Lifecycle
from .records import record


def register(root: Any, guard: Any, host: Lifecycle[E]) -> None:
    current, now_ms = host.current_event, host.now_ms
    budget, holder_name = host.fuel_per_event, host.holder

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

    def fuel_used(store: Any) -> int:
        # Every call into the guest starts with the whole budget (core/instance.py's
        # Instance.call). `store` is the calling Store's context, which has no get_fuel of
        # its own: Store's reads the fuel through the context alone.
        return max(0, budget - Store.get_fuel(store))

    def holder(_store: Any) -> str:
        return holder_name

    with root.add_instance("wk:host/lifecycle@0.1.0") as iface:
        iface.add_func("self-ref", guard(self_ref))
        iface.add_func("now", guard(now))
        iface.add_func("delete-self", guard(delete_self))
        iface.add_func("last-trap", guard(last_trap))
        iface.add_func("fuel-used", guard(fuel_used))
        iface.add_func("holder", guard(holder))
