"""The `lifecycle` interface: who am I, what time is it, why my last event trapped, and
delete me."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core import event
from ..wire import record

if TYPE_CHECKING:
    from ..core.host import Host


def register(root: Any, guard: Any, host: Host) -> None:
    clock = host.clock

    def self_ref(_store: Any) -> Any:
        ref = event.current().slot.ref
        return record(**{"class": ref.cls, "id": ref.id})

    def now(_store: Any) -> int:
        return clock.now_ms()

    def delete_self(_store: Any) -> None:
        event.current().delete_requested = True

    def last_trap(_store: Any) -> str | None:
        ev = event.current()
        ev.trap_read = True  # kept until this event ends without a trap (Host._after_event)
        return ev.slot.last_trap

    with root.add_instance("wk:host/lifecycle@0.1.0") as iface:
        iface.add_func("self-ref", guard(self_ref))
        iface.add_func("now", guard(now))
        iface.add_func("delete-self", guard(delete_self))
        iface.add_func("last-trap", guard(last_trap))
