"""The `alarm` WIT interface: the guest sets, reads and clears its one durable alarm,
whose row storage/host_rows.py keeps (and events/alarms.py follows after the event)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..storage.host_rows import guest_set, read
from ..storage.readonly import refusal
from .ports import E, Events

if TYPE_CHECKING:
    from wasmtime.component import LinkerInstance


def register(root: LinkerInstance, guard: Any, host: Events[E]) -> None:
    current = host.current_event

    def _write(at_ms: int | None) -> str | None:
        ev = current()
        if ev.read_only:
            return refusal("the alarm cannot change")
        db = ev.slot.require_db()
        ev.alarm_touched = True
        try:
            guest_set(db, at_ms)
        except Exception as e:  # the size cap, a full disk: an error the guest may retry
            return f"alarm not saved: {e}"
        return None

    def _set(_store: Any, at_ms: int) -> str | None:
        return _write(at_ms)

    def _clear(_store: Any) -> str | None:
        return _write(None)

    def _get(_store: Any) -> int | None:
        return read(current().slot.require_db()).at_ms

    with root.add_instance("wk:host/alarm@0.1.0") as iface:
        iface.add_func("set", guard(_set))
        iface.add_func("get", guard(_get))
        iface.add_func("clear", guard(_clear))
