"""Delivers due alarms: a heap of wake times in memory, fed from the index.

Fairness: due alarms are handed out oldest first, and at most `max_inflight` at a time,
so an actor that re-arms its alarm to "now" on every event goes to the back of the line
behind everything already due, and cannot starve its neighbours.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
from collections.abc import Callable

from ..clock import Clock
from ..types import ActorRef

log = logging.getLogger("wkhost.scheduler")

# How long the scheduler sleeps at most between looks at the clock. A real clock is
# followed to the millisecond by the timed wait; this only bounds drift after a
# suspend of the machine.
_MAX_SLEEP_S = 1.0


class Scheduler:
    def __init__(self, clock: Clock, fire: Callable[[ActorRef], None],
                 max_inflight: int) -> None:
        self._clock = clock
        self._fire = fire
        self._max_inflight = max_inflight
        self._cond = threading.Condition()
        self._heap: list[tuple[int, int, ActorRef]] = []
        self._due: dict[ActorRef, int] = {}      # the valid entry per actor
        self._inflight: set[ActorRef] = set()
        self._seq = itertools.count()
        self._stopped = False
        self._settle_waiters = 0
        self._thread = threading.Thread(target=self._run, name="wk-alarms", daemon=True)
        clock.on_jump(self.poke)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        if self._thread.is_alive():
            self._thread.join(timeout=2)

    def poke(self) -> None:
        with self._cond:
            self._cond.notify_all()

    def set(self, ref: ActorRef, at_ms: int | None) -> None:
        """Schedule (or unschedule, with None) the actor's alarm. The scheduler's thread
        is woken only if its next wake-up moves earlier: a workflow's retention alarm, far
        away, cost context switches for nothing.

        An alarm already due is still handed out by that thread, never by the setter:
        a setter is an event that holds the run gate, and alarm events handed out from
        there took the gate again before a waiting request could (the gate's semaphore
        is not first come, first served), so a few actors re-arming to now on every
        event starved requests (tests/e2e/test_runaway_guests.py)."""
        with self._cond:
            if at_ms is None:
                self._due.pop(ref, None)
                return
            # A time in the past is due now, not earlier than everything already waiting:
            # an actor re-arming to a past time must not jump the queue every time.
            at_ms = max(at_ms, self._clock.now_ms())
            if self._due.get(ref) == at_ms:
                return
            self._due[ref] = at_ms
            entry = (at_ms, next(self._seq), ref)
            heapq.heappush(self._heap, entry)
            if self._heap[0] is entry:
                self._cond.notify_all()

    def done(self, ref: ActorRef) -> None:
        """The fire for `ref` has finished; its next time (if any) was set already."""
        with self._cond:
            was_full = len(self._inflight) >= self._max_inflight
            self._inflight.discard(ref)
            at_ms = self._due.get(ref)
            earlier = False
            if at_ms is not None:  # set again while it ran; its heap entry was dropped
                entry = (at_ms, next(self._seq), ref)
                heapq.heappush(self._heap, entry)
                earlier = self._heap[0] is entry
            if was_full or earlier or self._settle_waiters:
                self._cond.notify_all()

    def pending(self) -> int:
        with self._cond:
            return len(self._due)

    def next_due(self) -> int | None:
        """When the earliest alarm set is due (ms), or None: what a test clock skips to."""
        with self._cond:
            return min(self._due.values(), default=None)

    def wait_settled(self, timeout_s: float) -> bool:
        """Wait until no alarm is due and none is running, at most `timeout_s`; whether
        that came. For a test clock: after a jump, what came due has been delivered,
        including alarms those events set for the same moment."""
        with self._cond:
            self._settle_waiters += 1
            try:
                return self._cond.wait_for(self._settled, timeout_s)
            finally:
                self._settle_waiters -= 1

    def _settled(self) -> bool:
        now = self._clock.now_ms()
        return not self._inflight and all(at > now for at in self._due.values())

    def _take_due(self) -> list[ActorRef]:
        now = self._clock.now_ms()
        taken: list[ActorRef] = []
        while self._heap and self._heap[0][0] <= now:
            if len(self._inflight) >= self._max_inflight:
                break
            at_ms, _, ref = heapq.heappop(self._heap)
            if self._due.get(ref) != at_ms:
                continue  # superseded by a later set
            if ref in self._inflight:
                continue  # done() pushes it again once the running fire has finished
            del self._due[ref]
            self._inflight.add(ref)
            taken.append(ref)
        return taken

    def _sleep_s(self) -> float:
        if not self._heap or len(self._inflight) >= self._max_inflight:
            return _MAX_SLEEP_S
        return max(0.0, min(_MAX_SLEEP_S, (self._heap[0][0] - self._clock.now_ms()) / 1000))

    def _run(self) -> None:
        while True:
            with self._cond:
                if self._stopped:
                    return
                due = self._take_due()
                if not due:
                    self._cond.wait(self._sleep_s())
                    continue
            for ref in due:
                try:
                    self._fire(ref)
                except Exception:
                    log.exception("could not hand out the alarm of %s", ref)
                    self.done(ref)
