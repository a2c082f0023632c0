"""An actor's one durable alarm, from the guest's set to its fire and retries.

Where its state lives, and who keeps each part true:
- the actor's `_wk_host_alarm` row (storage/host_rows.py) is the truth: the guest sets
  and clears it (interfaces/alarm.py), and a fire clears it or re-sets it for a retry;
- the index (storage/index.py) holds every actor's next time, so that a start finds them
  all without opening every database; `sync` keeps it to the row after each event;
- the scheduler's heap (runtime/scheduler.py) holds them in memory and hands due ones out;
- `slot.alarm_seen` is the row as last synced, so that an unchanged row costs nothing.

A fire runs the actor's on-alarm. On success the row is cleared; on a failure it is
re-set with a growing delay (host_rows.retry_delay_ms); if the event itself fails
before either could be written (a full disk), the scheduler retries from memory.
Unless the event set or cleared the alarm itself: its choice wins.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from .. import metrics
from ..clock import Clock
from ..config import HostConfig
from ..errors import GuestFailed, HostError, LeaseLost
from ..logs import actor
from ..runtime.scheduler import Scheduler
from ..storage import host_rows
from ..storage.actordb import ActorDb
from ..storage.index import Index
from ..traps import TrapKind
from ..types import ActorRef
from .actor_slot import ActorSlot
from .event import ActorGone, Chain, Event
from .seams import CallExport, RunEvent

log = logging.getLogger("wkhost")



class Alarms:
    def __init__(self, config: HostConfig, clock: Clock, scheduler: Scheduler, index: Index,
                 call_export: CallExport) -> None:
        self._config = config
        self._clock = clock
        self.scheduler = scheduler
        self._index = index
        self._call_export = call_export
        self._run_event: RunEvent | None = None

    def runs_with(self, run_event: RunEvent) -> None:
        """The event runner, made after the alarms (it settles an event's alarm)."""
        self._run_event = run_event

    # -- the index and the scheduler ------------------------------------------------------
    def load(self) -> None:
        """At start: every alarm of the index, into the scheduler."""
        for ref, at_ms in self._index.alarms():
            self.scheduler.set(ref, at_ms)

    def opened(self, slot: ActorSlot, db: ActorDb) -> None:
        """The actor's database has just been opened: what its row holds."""
        # A database just made holds the template's alarm row: nothing to read.
        slot.alarm_seen = host_rows.NONE if db.created else host_rows.read(db)

    def after_event(self, slot: ActorSlot, ev: Event) -> None:
        if ev.alarm_touched or ev.kind != "request":
            self.sync(slot, fired=ev.kind == "alarm")

    def sync(self, slot: ActorSlot, fired: bool = False) -> None:
        """Tell the scheduler and the index what the actor's database now holds. After a
        fire the scheduler has let go of the actor, so it is told even an unchanged time
        (an alarm re-set to the time that just fired)."""
        row = host_rows.read(slot.require_db())
        if fired or slot.alarm_seen is None or row.at_ms != slot.alarm_seen.at_ms:
            self.scheduler.set(slot.ref, row.at_ms)
            self._index.set_alarm(slot.ref, row.at_ms)
        slot.alarm_seen = row

    def forget(self, ref: ActorRef) -> None:
        """The actor is gone: its alarm with it (the index forgets the actor whole)."""
        self.scheduler.set(ref, None)

    @staticmethod
    def holds_one(slot: ActorSlot) -> bool:
        """The actor's alarm, as last synced, is set."""
        return slot.alarm_seen is not None and slot.alarm_seen.at_ms is not None

    def next_is_far(self, slot: ActorSlot) -> bool:
        """The actor's next alarm (as last synced) is none, or past the idle sweep's time:
        nothing would keep it warm meanwhile."""
        assert slot.alarm_seen is not None
        at_ms = slot.alarm_seen.at_ms
        far = self._clock.now_ms() + self._config.idle_instance_s * 1000
        return at_ms is None or at_ms > far

    # -- a fire ---------------------------------------------------------------------------
    def fire(self, ref: ActorRef) -> None:
        """Run the actor's due alarm (on an event thread), and let the scheduler know."""
        assert self._run_event is not None
        deadline = time.monotonic() + self._config.wall_budget_ms / 1000
        ran: list[Event] = []

        def on_alarm(slot: ActorSlot, ev: Event) -> None:
            ran.append(ev)
            self._on_alarm(slot, ev)

        try:
            self._run_event(ref, "alarm", Chain(), deadline, on_alarm, create=False)
        except ActorGone:
            # Deleted since its alarm was indexed: an alarm never creates an actor.
            self._index.remove_actor(ref)
        except LeaseLost as e:
            # Cluster mode: the node that holds the shard now has the alarm (its store).
            # A write refused inside the guest's call trapped, and its trap's line
            # (events/settle.py) is the one report; any other refusal is said here.
            if not (ran and self._refusal_trapped(ran[0])):
                log.info("%s: alarm not run here: %s", ref, e,
                         extra=actor(ref, event="alarm"))
        except HostError as e:
            log.warning("%s: alarm event failed: %s", ref, e,
                        extra=actor(ref, event="alarm", reason=str(e)))
            self._retry_in_memory(ref)
        except Exception:
            log.exception("%s: alarm event failed", ref, extra=actor(ref, event="alarm"))
            self._retry_in_memory(ref)
        finally:
            self.scheduler.done(ref)

    def run_now(self, ref: ActorRef, deadline: float) -> Any:
        """The actor's on-alarm, now, on this thread, through the whole event path (its
        lock, instance, the alarm's sync after it), whether or not its alarm is due, and
        leaving its alarm's row as the guest leaves it: for benches and tests. What the
        guest's on-alarm returned (its error), or None; ActorGone if there is no actor."""
        assert self._run_event is not None
        return self._run_event(ref, "alarm", Chain(), deadline, self._on_alarm_now,
                               create=False)

    def _on_alarm_now(self, slot: ActorSlot, ev: Event) -> Any:
        return self._call_export(slot, ev, "on-alarm", ())

    @staticmethod
    def _refusal_trapped(ev: Event) -> bool:
        return ev.trapped is not None and ev.trapped.kind is TrapKind.LEASE_LOST

    def _retry_in_memory(self, ref: ActorRef) -> None:
        """The event failed before its alarm could be re-set or retried in its database
        (a full disk, say): keep trying from memory, so the actor is not forgotten until a
        restart. The database, once writable, takes over again."""
        self.scheduler.set(ref, self._clock.now_ms() + self._config.alarm_retry_base_ms)

    def _on_alarm(self, slot: ActorSlot, ev: Event) -> None:
        db = slot.require_db()
        before = host_rows.read(db)
        now_ms = self._clock.now_ms()
        if before.at_ms is None or before.at_ms > now_ms:
            return  # stale: cleared or moved since it was scheduled
        metrics.alarm_late((now_ms - before.at_ms) / 1000)
        failure = self._call_on_alarm(slot, ev)
        db.end_event()
        if ev.delete_requested and failure is None:
            # The actor is going away; leave its alarm as it is, so that a crash before
            # the files are gone brings the event (and its delete-self) back.
            return
        if host_rows.read(db).gen != before.gen:
            return  # the event set or cleared the alarm: its choice wins
        if failure is None:
            host_rows.host_clear(db)
        else:
            self._retry(slot, db, before, failure, ev)

    def _call_on_alarm(self, slot: ActorSlot, ev: Event) -> str | None:
        """The guest's on-alarm: why it failed, or None."""
        try:
            err = self._call_export(slot, ev, "on-alarm", ())
        except GuestFailed as e:
            return str(e)
        return None if err is None else f"on-alarm returned an error: {err}"

    def _retry(self, slot: ActorSlot, db: ActorDb, before: host_rows.AlarmRow,
               failure: str, ev: Event) -> None:
        config = self._config
        delay = host_rows.retry_delay_ms(before.retries, config.alarm_retry_base_ms,
                                           config.alarm_retry_max_ms)
        host_rows.host_retry(db, self._clock.now_ms() + delay, before.retries + 1)
        if self._refusal_trapped(ev):
            # A write the store refused: its trap's line is the one report (events/settle.py);
            # the retry only paces the next try here, once the copy is restored.
            return
        log.warning("%s: %s; retrying in %d ms", slot.ref, failure, delay,
                    extra=actor(slot.ref, event="alarm", reason=failure, retry_ms=delay))
