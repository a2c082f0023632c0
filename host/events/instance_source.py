"""Where an actor's instance comes from: a spare of its class, or a new one, made room
for when the instance pool is full."""

from __future__ import annotations

from .. import metrics
from ..config import HostConfig
from ..engine.instance import Engine, Instance, Output, PoolExhausted
from ..engine.spare_instances import SpareInstances
from ..errors import Overloaded
from ..runtime.memory_budget import MemoryBudget
from .actor_slot import ActorSlot
from .classes import ActorClass
from .eviction import Eviction, live_cap
from .slot_table import SlotTable


class InstanceSource:
    def __init__(self, engine: Engine, config: HostConfig, classes: dict[str, ActorClass],
                 slots: SlotTable, spares: SpareInstances, eviction: Eviction,
                 budget: MemoryBudget | None = None) -> None:
        self._engine = engine
        self._config = config
        self._classes = classes
        self._slots = slots
        self._spares = spares
        self._eviction = eviction
        self._budget = budget

    def instance_for(self, slot: ActorSlot, creating: bool) -> Instance:
        """An instance for the actor, its output bound to the actor's (`creating`: the
        actor is new, and may take a spare)."""
        if len(self._slots) > live_cap(self._config):
            self._eviction.make_room()  # now, not at the next sweep: a burst must not pile up
        cap = self._config.max_guest_output_bytes

        def output(data: bytes, past_cap: bool = False) -> int | None:
            return slot.output.write(data, cap, past_cap)

        cls = self._classes[slot.ref.cls]
        inst = None
        if creating and cls.reuse_instances:
            # Only a new actor takes a spare: its on-init is the reused instance's first
            # call, and there the SDK lets the last actor's object go.
            inst = self._spares.take(slot.ref.cls)
        if inst is None:
            if self._budget is not None:
                self._budget.new_instance()  # where a burst grows the RSS
            inst = self._instantiate(cls, output)
        else:
            inst.set_output(output)
        inst.actors_served += 1
        return inst

    def _instantiate(self, cls: ActorClass, output: Output) -> Instance:
        config = self._config
        for evicted in (False, True):
            try:
                return Instance(self._engine, cls.linker, cls.exports,
                                config.memory_limit_bytes, output,
                                config.max_guest_output_bytes)
            except PoolExhausted:
                pass
            if not evicted:
                # Every pooled slot holds an instance: the idle ones give theirs back.
                self._spares.drop_idle(0)
                self._eviction.evict_idle(keep=live_cap(config) // 2)
        metrics.refused(metrics.INSTANCES)
        raise Overloaded("every instance slot is busy with an event; retry shortly")
