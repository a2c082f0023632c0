"""The `lifecycle` interface: who am I, what time is it, why my last event trapped (as
text, or as a kind, a message and the exception the guest reported), how much fuel I
have burnt, who runs me, delete me, a deadline of my own, read only from now on, and the
exception I am about to trap on."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from wasmtime import Store

from ..traps import GuestException, TrapReason
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

    def fuel_used(store: Any) -> int:
        # Every call into the guest starts with the whole budget (engine/instance.py's
        # Instance.call). `store` is the calling Store's context, which has no get_fuel of
        # its own: Store's reads the fuel through the context alone.
        return max(0, budget - Store.get_fuel(store))

    def now_and_fuel(store: Any) -> tuple[int, int]:
        return now_ms(), fuel_used(store)

    def holder(_store: Any) -> str:
        return holder_name

    def narrow_deadline(_store: Any, within_ms: int | None) -> None:
        # The event sets the calling Store's epoch deadline through its instance, as a
        # host call cut by the narrowed deadline does (events/event.py).
        current().narrow(within_ms)

    funcs = {"self-ref": self_ref, "now": now, "delete-self": delete_self,
             "fuel-used": fuel_used, "now-and-fuel": now_and_fuel, "holder": holder,
             "narrow-deadline": narrow_deadline,
             "read-only": _read_only(current), **_trap_funcs(current)}
    with root.add_instance("wk:host/lifecycle@0.1.0") as iface:
        for name, fn in funcs.items():
            iface.add_func(name, guard(fn))


def _trap_funcs(current: Callable[[], E]) -> dict[str, Callable[..., Any]]:
    """last-trap, last-trap-info and report-exception."""
    def last_trap(_store: Any) -> str | None:
        ev = current()
        ev.trap_read = True  # kept until this event ends without a trap (events/settle.py)
        trap = ev.slot.last_trap
        return None if trap is None else trap.message

    def last_trap_info(_store: Any) -> Any:
        ev = current()
        ev.trap_read = True  # as last-trap: the same reason, whole
        trap = ev.slot.last_trap
        return None if trap is None else trap_info(trap)

    def report_exception(_store: Any, type_name: str, message: str, traceback: str) -> None:
        # Bounded here: the guest controls each string. Kept with the trap that follows.
        current().exception = GuestException.bounded(type_name, message, traceback)

    return {"last-trap": last_trap, "last-trap-info": last_trap_info,
            "report-exception": report_exception}


def trap_info(trap: TrapReason) -> Any:
    """The WIT record `trap-info` of a kept reason."""
    e = trap.exception
    exception = None if e is None else record(**{
        "type-name": e.type_name, "message": e.message, "traceback": e.traceback})
    return record(kind=trap.kind.seen_by_guest().value, message=trap.message,
                  exception=exception)


def _read_only(current: Callable[[], E]) -> Callable[[Any], None]:
    def read_only(_store: Any) -> None:
        current().read_only = True  # nothing lifts it before the event ends
    return read_only
