"""The guest's output of one event, into the host's log (`wkhost.guest.<class>`)."""

from __future__ import annotations

import logging

from ..logs import actor
from .actor_slot import ActorSlot
from .event import Event


def flush_output(slot: ActorSlot, ev: Event, cap: int) -> None:
    """Log what the guest wrote in the event, line by line, and what was dropped past
    `cap` (the config's max_guest_output_bytes)."""
    text, dropped, flooded = slot.output.take()
    if not text and not dropped:
        return
    guest_log = logging.getLogger(f"wkhost.guest.{slot.ref.cls}")
    # After a trap, the guest's output is its traceback: why, in its own words.
    level = logging.INFO if ev.trapped is None else logging.WARNING
    fields = actor(slot.ref, event=ev.kind)  # one for every line of the event's
    for line in text.rstrip("\n").splitlines():
        guest_log.log(level, "[%s] %s", slot.ref, line, extra=fields)
    if dropped:
        guest_log.warning("[%s] %d more bytes of output dropped (cap %d per event)%s",
                          slot.ref, dropped, cap, "; writes past it fail" if flooded else "",
                          extra=fields)
