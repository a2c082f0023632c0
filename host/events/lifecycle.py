"""Running one event of one actor, from its lock to its end.

An event takes its actor's lock through the call graph, opens the actor's database (before
it takes a run slot), instantiates the guest and creates the actor (on-init) if it is
new, runs its body (a request's handle, an alarm's on-alarm) in a run slot, settles its
effects (events/settle.py), and lets go: the actor's instance and database too, should
the actor now sleep, and the held requests it wakes (events/holds.py).
"""

from __future__ import annotations

import functools
import logging
import time
from typing import TYPE_CHECKING, Any, TypeVar

from .. import metrics, tracing
from ..config import HostConfig
from ..errors import GuestFailed, StorageFailed
from ..logs import actor, one_line
from ..runtime.run_places import RunPlaces
from ..storage import host_rows
from ..storage.actordb import ActorDb, StorageError
from ..storage.files import delete_db_files, is_storage_failure
from ..testing import Switches
from ..traps import TrapReason
from ..types import ActorRef
from . import event
from .actor_parts import ActorParts
from .actor_slot import ActorSlot
from .event import ActorGone, Chain, Event
from .observe import Observer
from .schema_learning import image_for, learn_schema
from .seams import Body
from .settle import Settle

if TYPE_CHECKING:
    from ..replication.copy import Copy

log = logging.getLogger("wkhost")
T = TypeVar("T")


class EventRunner:
    def __init__(self, config: HostConfig, parts: ActorParts, places: RunPlaces,
                 settle: Settle, testing: Switches, observer: Observer | None = None) -> None:
        """What an event needs: the actors' side (events/actor_parts.py), the runtime's
        places it takes and lends (runtime/run_places.py), and what follows it (settle).
        Each part is bound here, once: every event reads them."""
        self._config = config
        self._observer = observer
        self._testing = testing
        self._settle = settle
        self._classes = parts.classes
        self._slots = parts.slots
        self._graph = parts.graph
        self._instances = parts.instances
        self._call_export = parts.call_export
        self._alarms = parts.alarms
        self._holds = parts.holds
        self._index = parts.index
        self._eviction = parts.eviction
        self._replication = parts.replication
        self._gate = places.gate
        self._long_wait = places.long_wait
        self._admission = places.admission
        self._statement_loan = places.statement_loan

    # -- one event ------------------------------------------------------------------------
    def run(self, ref: ActorRef, kind: str, chain: Chain, deadline: float, body: Body[T],
            create: bool = True, wakes_holds: bool = True) -> T:
        """Run `body` as an event of `kind` of the actor, within `deadline`. `create`:
        make the actor if it does not exist (else ActorGone); `wakes_holds`: its end
        delivers the actor's held requests again.

        A failure of its database or disk that no step turned into an answer (a full
        disk under a host write: the actor's meta, its alarm's row) is StorageFailed,
        never an unexpected error: the host goes on serving the others."""
        try:
            if tracing.tracer is None:
                return self._run(ref, kind, chain, deadline, body, create, wakes_holds, None)
            with tracing.event_span(ref.cls, ref.id, kind) as span:
                return self._run(ref, kind, chain, deadline, body, create, wakes_holds, span)
        except (StorageError, OSError) as e:
            if not is_storage_failure(e):
                raise
            log.warning("%s: its %s event failed on storage: %s", ref, kind, one_line(e),
                        extra=actor(ref, event=kind, reason=one_line(e)))
            raise StorageFailed(f"{ref}'s storage failed: {one_line(e)}") from None

    def _run(self, ref: ActorRef, kind: str, chain: Chain, deadline: float, body: Body[T],
             create: bool, wakes_holds: bool, span: Any) -> T:
        slot = self._take(ref, chain, deadline)
        ev = Event(slot, kind, deadline, chain, self._gate, self._long_wait,
                   self._statement_loan)
        stack = event.stack()
        # Opening the database before the run slot, and closing it with the instance
        # after, keeps that work off the one core that runs events: SQLite and munmap
        # run beside the next event instead.
        sleeps, failed, started = False, None, time.perf_counter()
        try:
            exists = self._open_storage(slot, create)
            with self._gate.running():
                stack.append(ev)
                try:
                    out = self._enter(slot, ev, body, exists, create)
                finally:
                    stack.pop()
                    sleeps = self._settle.after_event(slot, ev)
                    if ev.answered and ev.refused is not None:
                        raise ev.refused  # read once: never the guest's answer or trap
                return out
        except BaseException as e:
            failed = e
            raise
        finally:
            # Each step of the end path runs whatever the one before it raised: the
            # actor is let go (its lock released) even if reading its database failed.
            try:
                if ev.guest_spans is not None:  # what the guest left open: cut (WIT trace)
                    ev.guest_spans.close(f"the event ended first ({ev.outcome or 'error'})")
            finally:
                try:
                    self._let_go(slot, ev, sleeps, wakes_holds)
                finally:
                    if not isinstance(failed, ActorGone):  # none ran: nothing to count
                        self._counted(ref, kind, ev, failed, started, span)

    def _counted(self, ref: ActorRef, kind: str, ev: Event, failed: BaseException | None,
                 started: float, span: Any) -> None:
        outcome = ev.outcome or (metrics.OK if failed is None else metrics.ERROR)
        took = time.perf_counter() - started
        metrics.event_ended(ref.cls, kind, outcome, took, ev.fuel)
        if self._observer is not None:
            self._observer.event_ended(ref, kind, outcome, int(took * 1e9))
        if span is not None:
            tracing.event_ended(span, outcome, ev.fuel)

    def _take(self, ref: ActorRef, chain: Chain, deadline: float) -> ActorSlot:
        """The actor's slot, its lock taken for `chain` (or DeadlineExceeded)."""
        slot = self._slots.enqueue(ref)
        try:
            self._graph.acquire(chain, slot, deadline - time.monotonic(), self._long_wait)
        finally:
            self._slots.dequeue(slot)
        return slot

    def _enter(self, slot: ActorSlot, ev: Event, body: Body[T], exists: bool,
               create: bool) -> T:
        """The body's answer, once the actor is ready; `ev.answered` once it answered or
        trapped (GuestFailed), for what its end found refused to fail it instead."""
        try:
            if not exists or not self._ready(slot, ev, create):
                raise ActorGone(f"{slot.ref} does not exist")
            out = body(slot, ev)
        except GuestFailed:
            ev.answered = True
            raise
        ev.answered = True
        return out

    def _let_go(self, slot: ActorSlot, ev: Event, sleeps: bool, wakes_holds: bool) -> None:
        """Release the actor's lock, whatever fails before."""
        try:
            self._admission.settle(slot, self._eviction.keeps_something)
            if sleeps:
                self._eviction.close_slot(slot)  # the instance and the db: nothing warm
            # Before the lock goes: see events/holds.py for why no wake-up is lost.
            if wakes_holds:
                self._holds.wake(slot.ref)
            if ev.hold_ms:
                ev.hold = self._holds.add(slot.ref)
        finally:
            self._graph.release(ev.chain, slot)

    # -- the actor's database and instance ----------------------------------------------
    def _open_storage(self, slot: ActorSlot, create: bool) -> bool:
        """Open the actor's db, unless it is open. False: the actor does not exist."""
        if self._replication is not None:  # cluster mode: a copy of this epoch's
            self._replication.prepare(slot.ref, slot.path,
                                      functools.partial(self._close_stale, slot))
        if slot.db is None:
            if not slot.path.exists():
                if not create:
                    return False
            else:
                self._admission.known(slot)
        if create:  # one that holds no place in --max-actors takes one (runtime/admission.py)
            self._admission.take(slot)
        if slot.db is None:
            db = self._open_db(slot)
            try:
                self._alarms.opened(slot, db)
            except StorageError as e:
                db.close()
                raise StorageFailed(f"{slot.ref}'s database cannot be read: {e}") from None
            slot.db = db
        return True

    def _close_stale(self, slot: ActorSlot) -> None:
        if slot.db is not None or slot.instance is not None:
            self._eviction.close_slot(slot)

    def _open_db(self, slot: ActorSlot) -> ActorDb:
        config = self._config
        image = image_for(self._classes.get(slot.ref.cls), config.schema_images)
        try:
            db = ActorDb(slot.path, config.db_max_bytes // 4096, image,
                         config.db_max_value_bytes, self._copy(slot))
        except (StorageError, OSError) as e:
            raise StorageFailed(f"{slot.ref}'s database cannot be opened: {e}") from None
        db.max_result_bytes = config.memory_limit_bytes  # what the guest could receive
        return db

    def _copy(self, slot: ActorSlot) -> Copy | None:
        return None if self._replication is None else self._replication.copy_of(slot.ref)

    def _ready(self, slot: ActorSlot, ev: Event, create: bool) -> bool:
        """An instance for the open db; create the actor (on-init) if it is new."""
        if slot.initialized is None:
            self._read_meta(slot)
        if slot.instance is None:
            slot.instance = self._instances.instance_for(
                slot, creating=create and not slot.initialized)
        if not slot.initialized:
            if not create:
                return False
            self.create(slot, ev)
        return True

    def _read_meta(self, slot: ActorSlot) -> None:
        """Whether the actor was created, and why its last event trapped, from its db."""
        db = slot.require_db()
        # A database just made has no meta yet: nothing to read.
        meta = {} if db.created else host_rows.read_meta(db)
        slot.initialized = meta.get("initialized") == 1
        trap = meta.get("trap")
        slot.last_trap = (None if trap is None
                          else TrapReason.decoded(str(trap), meta.get("trap_detail")))
        if not slot.initialized and (meta or not db.created):
            # An earlier on-init never finished (the host died in it), or the host
            # died before it began, in a database made from a schema image that the
            # on-init had yet to take up: start clean.
            slot.close()
            delete_db_files(slot.path)
            self._admission.gone(slot)
            self._open_storage(slot, create=True)
            slot.initialized = False

    # -- a new actor ----------------------------------------------------------------------
    def create(self, slot: ActorSlot, ev: Event) -> None:
        """Make the actor: its meta rows, its on-init, and its place in the index."""
        db = slot.require_db()
        host_rows.first_meta(db, slot.ref.cls, slot.ref.id)
        self._run_on_init(slot, ev, db)
        learn_schema(self._classes[slot.ref.cls], db, self._config.schema_images)
        db.end_event()
        if self._testing.crash_armed:
            self._testing.crash(f"init:{slot.ref.cls}")
        # Committed like an exec, not fsynced: a power loss that loses it loses every later
        # commit of this database too (WAL frames survive as a prefix), so the actor is
        # then simply not created yet; the first exec-durable makes it durable.
        host_rows.mark_initialized(db)
        slot.initialized = True
        self._index.add_actor(slot.ref)

    def _run_on_init(self, slot: ActorSlot, ev: Event, db: ActorDb) -> None:
        """The guest's on-init; should it fail, the actor is removed again."""
        try:
            err = self._call_export(slot, ev, "on-init", ())
            if err is not None:
                raise GuestFailed(f"on-init failed: {err}")
            db.end_speculation()
        except GuestFailed as e:
            log.warning("%s: on-init failed, the actor was not created: %s", slot.ref, e,
                        extra=actor(slot.ref, event=ev.kind, reason=str(e)))
            self._eviction.destroy(slot)
            raise GuestFailed(f"{slot.ref} could not be created: {e}") from None
