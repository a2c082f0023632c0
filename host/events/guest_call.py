"""A call into the guest within its event's budgets (`call_export`), and the object the
event's parts are handed to make it (`GuestCall`, the CallExport of events/seams.py),
which tells the host's Observer, if it has one, what each call cost."""

from __future__ import annotations

import time
from typing import Any

from ..config import HostConfig
from ..engine.instance import failure
from ..errors import GuestFailed
from ..traps import TrapKind, TrapReason
from .actor_slot import ActorSlot
from .event import Event
from .observe import Observer
from .trapped import ended


def call_export(slot: ActorSlot, ev: Event, export: str, args: tuple[Any, ...],
                config: HostConfig) -> Any:
    """Call the guest's `export` within the event's budgets. A trap drops the instance,
    marks the event as trapped (why, as a value: events/trapped.py), and raises
    GuestFailed."""
    inst = slot.instance
    assert inst is not None
    wall_ms = max(0.0, ev.remaining_s() * 1000)
    ev.unnarrow()  # lifecycle.narrow-deadline's, should an earlier call have set it
    ev.exception = None  # lifecycle.report-exception's, of an earlier call
    fuel = config.fuel_per_event()
    try:
        out = inst.call(export, args, fuel, wall_ms)
    except GuestFailed as e:
        slot.instance = None  # a trap poisons the instance and its Store
        trap, ev.outcome = ended(inst.trap or TrapReason(TrapKind.GUEST, str(e)),
                                 ev.limit_traps, ev.exception, slot.output,
                                 config.max_guest_output_bytes)
        ev.fuel += fuel - inst.fuel_at_trap
        ev.trapped = trap
        raise failure(trap) from None
    ev.fuel += inst.fuel_used(fuel)
    return out


class GuestCall:
    """`call_export` with the host's config, and its Observer told of each call."""

    def __init__(self, config: HostConfig, observer: Observer | None) -> None:
        self._config = config
        self._observer = observer

    def __call__(self, slot: ActorSlot, ev: Event, export: str, args: tuple[Any, ...]) -> Any:
        if self._observer is None:
            return call_export(slot, ev, export, args, self._config)
        fuel, started = ev.fuel, time.perf_counter_ns()
        try:
            return call_export(slot, ev, export, args, self._config)
        finally:
            self._observer.guest_call(slot.ref, export, time.perf_counter_ns() - started,
                                      ev.fuel - fuel)
