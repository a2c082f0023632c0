"""The actors this process keeps in memory, and the events queued on each.

Whether this process serves an actor is not asked here: it was asked once, where the
request or call came in (host/placement.py; the front door, the peer routes, an actor's
call), and an alarm is only ever of an actor this process serves."""

from __future__ import annotations

import threading

from .. import metrics
from ..config import HostConfig
from ..errors import Overloaded
from ..storage import paths
from ..types import ActorRef
from .actor_slot import ActorSlot


class SlotTable:
    """Each actor's slot, by ref, under one lock (`lock`, which guards `by_ref` and every
    slot's `waiting`)."""

    def __init__(self, config: HostConfig) -> None:
        self._config = config
        self.by_ref: dict[ActorRef, ActorSlot] = {}
        self.lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.by_ref)

    def enqueue(self, ref: ActorRef) -> ActorSlot:
        """Find or make the actor's slot and count this event as waiting on it, atomically,
        so the janitor never drops a slot that an event is about to lock."""
        config = self._config
        with self.lock:
            slot = self.by_ref.get(ref)
            if slot is None:
                slot = self.by_ref[ref] = ActorSlot(ref, paths.db_path(
                    config.data_dir, ref.cls, ref.id))
            if slot.waiting >= config.max_queue_per_actor:
                metrics.refused(metrics.ACTOR_QUEUE)
                raise Overloaded(f"{ref} has {slot.waiting} events waiting; retry shortly")
            slot.waiting += 1
            return slot

    def dequeue(self, slot: ActorSlot) -> None:
        """The event waits on the slot no more: it holds its lock, or gave up."""
        with self.lock:
            slot.waiting -= 1

    def all(self) -> list[ActorSlot]:
        with self.lock:
            return list(self.by_ref.values())
