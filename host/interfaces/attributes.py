"""The `attributes` WIT interface: the guest publishes what operators list it by. The
actor's database keeps it (storage/attributes.py, ActorDb.publish); events/settle.py copies
what was committed into the host's index after the event."""

from __future__ import annotations

from typing import Any

from ..storage.attributes import checked, decoded
from ..storage.readonly import refusal
from .ports import E, Events


def register(root: Any, guard: Any, host: Events[E]) -> None:
    current = host.current_event

    def publish(_store: Any, status: str, updated_ms: int,
                labels: list[tuple[str, str]] | None) -> str | None:
        ev = current()
        if ev.read_only:
            return refusal("nothing can be published")
        db = ev.slot.require_db()
        before = None if labels is not None else decoded(db.published())
        try:
            attrs = checked(status, updated_ms, labels, before)
        except ValueError as e:
            return f"not published: {e}"
        ev.published = True
        try:
            db.publish(attrs.encoded())
        except Exception as e:  # the size cap, a full disk: an error the guest may retry
            return f"not published: {e}"
        return None

    with root.add_instance("wk:host/attributes@0.1.0") as iface:
        iface.add_func("publish", guard(publish))
