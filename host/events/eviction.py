"""Letting actors go: idle ones' instances and databases (memory and file descriptors
stay bounded), a deleted one's files, and a new one that kept nothing."""

from __future__ import annotations

import heapq
import time
from operator import attrgetter

from .. import metrics
from ..config import HostConfig
from ..engine.instance import Instance
from ..engine.spare_instances import SpareInstances
from ..runtime.admission import Admission
from ..runtime.memory_budget import LOW
from ..storage.files import delete_db_files
from ..storage.index import Index
from ..testing import Switches
from .actor_slot import ActorSlot
from .alarms import Alarms
from .classes import ActorClass
from .slot_table import SlotTable

# Under a memory budget, the live instances are capped by it too (live_cap): what the
# budget's low mark leaves past an idle server's own memory, per live actor (its
# instance's pooled slot, its database and the host's share).
BUDGET_RESERVE_BYTES = 160 << 20
LIVE_ACTOR_BYTES = 8 << 20  # beside the pool's pool_keep_resident_bytes
MIN_LIVE_INSTANCES = 4


def live_cap(config: HostConfig) -> int:
    """The instances kept warm: max_live_instances, or fewer under a memory budget.
    Why the budget caps them too: a pooled slot keeps its pages after its instance goes,
    and the pool's affinity hands them to the next instance; so few live instances keep
    few slots resident from the start, where letting actors go only once the RSS is
    over the budget comes after the slots were touched."""
    budget = config.memory_budget()
    if not budget:
        return config.max_live_instances
    room = int(budget * LOW) - BUDGET_RESERVE_BYTES
    per_actor = LIVE_ACTOR_BYTES + (config.pool_keep_resident_bytes
                                    if config.instance_pool else 0)
    return min(config.max_live_instances, max(MIN_LIVE_INSTANCES, room // per_actor))


class Eviction:
    def __init__(self, config: HostConfig, slots: SlotTable, classes: dict[str, ActorClass],
                 spares: SpareInstances, admission: Admission, alarms: Alarms,
                 index: Index, testing: Switches) -> None:
        self._config = config
        self._testing = testing
        self._slots = slots
        self._classes = classes
        self._spares = spares
        self._admission = admission
        self._alarms = alarms
        self._index = index

    # -- idle actors ----------------------------------------------------------------------
    def evict_idle(self, keep: int | None = None) -> int:
        """Drop idle actors' instances and databases: those idle past idle_instance_s (or
        followed_s, for a sleepy one), then the least recently used beyond `keep` (default
        the live cap, config.live_instances). Returns how many were dropped."""
        config = self._config
        now = time.monotonic()
        slots = sorted(self._slots.all(), key=lambda s: s.last_used)
        excess = len(slots) - (live_cap(config) if keep is None else keep)
        dropped = 0
        for slot in slots:
            idle_after = config.followed_s if slot.sleepy else config.idle_instance_s
            if now - slot.last_used <= idle_after and dropped >= excess:
                continue  # not idle, and the cap is kept: a sleepy one may still be
            if self.drop_slot(slot):
                dropped += 1
        return dropped

    def make_room(self) -> None:
        """Drop the least recently used idle actors beyond the live cap: the part of
        evict_idle that a new actor's event waits for (a few, not all of them)."""
        self.drop_least_recent(len(self._slots) - live_cap(self._config))

    def evict_for_memory(self, n: int) -> int:
        """Let go of up to `n` least recently used idle actors, to bring the RSS under
        the memory budget (runtime/memory_budget.py); counted in the metrics."""
        dropped = self.drop_least_recent(n)
        metrics.evicted_for_memory(dropped)
        return dropped

    def drop_least_recent(self, n: int) -> int:
        """Drop up to `n` of the least recently used actors that no event holds or waits
        for. Returns how many."""
        if n <= 0:
            return 0
        with self._slots.lock:
            # A few more than asked for, in case some of them are busy.
            oldest = heapq.nsmallest(n + 4, self._slots.by_ref.values(),
                                     key=attrgetter("last_used"))
        dropped = 0
        for slot in oldest:
            if dropped >= n:
                break
            if self.drop_slot(slot):
                dropped += 1
        return dropped

    def drop_slot(self, slot: ActorSlot) -> bool:
        """Close an actor that no event holds or waits for, and let its slot go."""
        table = self._slots
        with table.lock:
            if slot.waiting or not slot.lock.acquire(blocking=False):
                return False
            # One whose files go as it closes stays in the table until they are gone: a
            # new event for it then waits for its lock, instead of opening those files
            # through a slot of its own meanwhile.
            forget = self.keeps_nothing(slot)
            if not forget:
                table.by_ref.pop(slot.ref, None)
        # Closed outside the table's lock: closing a WAL database checkpoints it, which
        # must not hold up every other event's lookup.
        try:
            self.close_slot(slot)
            if forget:
                with table.lock:
                    if not slot.waiting:
                        table.by_ref.pop(slot.ref, None)
        finally:
            slot.lock.release()
        return True

    def close_slot(self, slot: ActorSlot) -> None:
        """Close the actor's instance and db (the caller holds its lock, or it is not
        running), and forget an actor that keeps nothing; the instance may serve the
        class's next new actor."""
        forget = self.keeps_nothing(slot)
        self.offer_spare(slot, slot.close())
        if forget:
            self.forget(slot)

    @staticmethod
    def keeps_nothing(slot: ActorSlot) -> bool:
        """A new actor (its file made by this process) that has written no row of its own
        and holds no alarm: when it closes, its files go with it, so that requests to
        any number of ids leave no database per id. Not per event: a busy actor that
        keeps nothing stays warm, its file with it, until it is let go."""
        db = slot.db
        return (db is not None and db.created and not db.wrote_rows
                and not Alarms.holds_one(slot))

    @staticmethod
    def keeps_something(slot: ActorSlot) -> bool:
        """Whether the actor's files stay when it is let go: its open db does not keep
        nothing, or, closed, they are there."""
        if slot.db is None:
            return slot.path.exists()
        return not Eviction.keeps_nothing(slot)

    def offer_spare(self, slot: ActorSlot, inst: Instance | None) -> None:
        if inst is not None and self._classes[slot.ref.cls].reuse_instances:
            self._spares.offer(slot.ref.cls, inst)

    # -- deleted actors -------------------------------------------------------------------
    def destroy(self, slot: ActorSlot) -> None:
        """Remove the actor: instance, database files, index entries and alarm."""
        self.offer_spare(slot, slot.close())
        if self._testing.crash_armed:
            self._testing.crash(f"delete:{slot.ref.cls}")
        self.forget(slot)

    def forget(self, slot: ActorSlot) -> None:
        """Its files, index entries and alarm (its db closed, its lock held)."""
        delete_db_files(slot.path)
        self._admission.gone(slot)
        self._alarms.forget(slot.ref)
        self._index.remove_actor(slot.ref)
