"""After an event: its effects settled while it still holds its actor's lock (the
guest's output logged, a transaction left open rolled back, a trap kept, the attributes
it published indexed, a delete done, the alarm synced), and whether the actor now
sleeps."""

from __future__ import annotations

import logging
import time

from ..config import HostConfig
from ..logs import actor
from ..storage import host_rows
from ..storage.actordb import ActorDb, StorageError
from ..storage.attributes import decoded
from ..storage.index import Index
from ..testing import Switches
from .actor_slot import ActorSlot
from .alarms import Alarms
from .event import Event
from .eviction import Eviction
from .guest_log import flush_output
from .slot_table import SlotTable

log = logging.getLogger("wkhost")


class Settle:
    def __init__(self, config: HostConfig, slots: SlotTable, alarms: Alarms,
                 eviction: Eviction, index: Index, testing: Switches) -> None:
        self._config = config
        self._index = index
        self._testing = testing
        self._slots = slots
        self._alarms = alarms
        self._eviction = eviction

    def after_event(self, slot: ActorSlot, ev: Event) -> bool:
        """Settle the event's effects. True: the actor sleeps, and its instance and
        database connection go as soon as the event has left its run slot."""
        flush_output(slot, ev, self._config.max_guest_output_bytes)
        db = slot.db
        if db is None:
            return False
        if db.end_event():
            log.info("%s: rolled back a transaction the event left open", slot.ref,
                     extra=actor(slot.ref, event=ev.kind))
        keep_trap(slot, ev, db)
        if ev.published:
            self._publish(slot, ev, db)
        if ev.delete_requested and slot.instance is not None:
            if db.working_copy is not None:  # cluster mode: from the store first
                db.working_copy.deleted()
            self._eviction.destroy(slot)
            return False
        self._alarms.after_event(slot, ev)
        copy = db.working_copy
        if copy is not None:  # cluster mode (replication/copy.py)
            copy.lazy(db)  # what `exec` committed goes to the store soon
            ev.refused = copy.lost  # a refusal, of this event's write or of one before
        return self._sleeps(slot, ev)

    def _publish(self, slot: ActorSlot, ev: Event, db: ActorDb) -> None:
        """The attributes the event published: those no statement took commit now (unless
        the event trapped); what is committed goes to the index, if it changed."""
        try:
            db.settle_attrs(commit=ev.trapped is None)
            encoded = db.published()
        except StorageError as e:
            log.warning("%s: its published attributes were not kept: %s", slot.ref, e,
                        extra=actor(slot.ref, event=ev.kind, reason=str(e)))
            return
        if encoded != slot.attrs_seen:
            self._index.set_attrs(slot.ref, decoded(encoded))
            slot.attrs_seen = encoded

    def _sleeps(self, slot: ActorSlot, ev: Event) -> bool:
        now = time.monotonic()
        slot.last_used = now
        if ev.kind == "request":
            slot.last_request, slot.sleepy = now, False
        if self._asleep(slot, ev):
            if now - slot.last_request < self._config.followed_s:
                # Asked something a moment ago (a workflow just started, its client about
                # to read the result): the next question should find it warm.
                slot.sleepy = True
            else:
                return True
        elif self._testing.always_fresh_instance:
            slot.instance = None
        return False

    def _asleep(self, slot: ActorSlot, ev: Event) -> bool:
        """An alarm event that leaves the next alarm far away (or none), while live actors
        fill more than half the instance cap: the actor sleeps, so its instance (several
        MiB) and its database connection go now rather than at the idle sweep. A request
        may still come; it pays an instantiation and an open."""
        if ev.kind != "alarm" or slot.alarm_seen is None:
            return False
        if len(self._slots) <= self._config.max_live_instances // 2:
            # Room to spare: keep it warm (a sleeping workflow woken by events replays from
            # its cached journal); the idle sweep still drops it in time.
            return False
        return self._alarms.next_is_far(slot)


def keep_trap(slot: ActorSlot, ev: Event, db: ActorDb) -> None:
    """Keep why a trapped event ended, in the actor's database, for the guest's next
    events (`lifecycle.last-trap` and `last-trap-info`); forget it once an event that
    asked for it ends cleanly. Committed like an exec: the reason is for the guest's
    bookkeeping, so a write that fails (a full disk, which may be why the event trapped)
    keeps it in memory only, and the event's own failure is what its caller hears.

    Two rows, written and removed together: `trap`, the message, as a wkhost before the
    kinds kept it, and `trap_detail`, the kind and the guest's reported exception."""
    trapped = ev.trapped
    try:
        if trapped is not None:
            log.warning("%s: its %s event trapped: %s", slot.ref, ev.kind, trapped.message,
                        extra=actor(slot.ref, event=ev.kind, reason=trapped.message))
            slot.last_trap = trapped
            host_rows.keep_trap(db, (trapped.message, trapped.encoded_detail()))
        elif ev.trap_read and slot.last_trap is not None:
            slot.last_trap = None
            host_rows.forget_trap(db)
    except StorageError as e:
        log.warning("%s: why its last event trapped was not kept: %s", slot.ref, e,
                    extra=actor(slot.ref, event=ev.kind, reason=str(e)))
