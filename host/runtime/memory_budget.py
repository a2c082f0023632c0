"""Keeping the process's RSS under `--memory-budget`.

Where memory grows, the host asks `check` (a new actor's instance, at most every few of
them or every ~50 ms; the janitor's round, each second). Over the high mark, a little
under the budget, it lets go, in order, of what costs the least to make again, and
reads the RSS after each: the spare instances, the instance pool's idle pages (only
while no instance lives: which slot a live instance holds is not exposed), the C
heap's free part, then the least recently used idle actors, a few at a time, until the
RSS is at the low mark. The gap between the marks is what keeps it from letting go
again at the next check.

An event in flight is never cut: only an actor that no event holds or waits for is let
go. When the actors busy with events alone hold more than the budget, the host serves
them all the same, and says so once in the log (again only after the RSS came back
under the budget).

The budget knows no actor: the host hands it the steps (core/host.py).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .memory import resident_bytes

log = logging.getLogger("wkhost")

# The marks, as parts of the budget: let go above HIGH, down to LOW.
HIGH = 0.90
LOW = 0.80
# A new instance's check reads the RSS once this many were made since the last read,
# or this long after it: a burst of new actors grows the RSS by an instance each.
CHECK_EVERY_INSTANCES = 4
CHECK_EVERY_S = 0.05
# Idle actors let go at a time, the RSS read again between.
EVICT_BATCH = 4
# After a let-go that could bring the RSS no lower, the next waits until it grew by this
# part of the budget, or this long (the janitor's next round or so: by then a busy actor
# may be idle): the same futile round at every new instance would only burn CPU.
REGROW_PARTS = 16
FUTILE_WAIT_S = 1.0


@dataclass(frozen=True)
class Steps:
    """What the host lets go of, cheapest first. Each cheap step frees what it can;
    `evict(n)` lets go of up to n least recently used idle actors and says how many."""

    cheap: Sequence[Callable[[], object]]
    evict: Callable[[int], int]


class MemoryBudget:
    def __init__(self, budget_bytes: int, steps: Steps,
                 read_rss: Callable[[], int | None] = resident_bytes) -> None:
        self.budget = budget_bytes
        self.rss = 0          # the RSS last read
        self.over = False     # the events in flight alone held more than the budget
        self.evicted = 0      # actors let go for memory (tests, benchmarks)
        self._steps = steps
        self._read = read_rss
        self._busy = threading.Lock()
        self._made = 0
        self._last = 0.0
        # The RSS a let-go could bring no lower (busy actors, pages that only a quiet
        # pool gives back), and until when that holds.
        self._floor = 0
        self._floor_until = 0.0

    @property
    def high(self) -> int:
        return int(self.budget * HIGH)

    @property
    def low(self) -> int:
        return int(self.budget * LOW)

    def new_instance(self) -> None:
        """A new instance is about to be made (a burst's path): check now and then,
        cheaply."""
        self._made += 1
        now = time.monotonic()
        if self._made < CHECK_EVERY_INSTANCES and now - self._last < CHECK_EVERY_S:
            return
        self.check()

    def check(self) -> None:
        """Read the RSS and, over the high mark, let go down to the low mark. A check
        while another is letting go returns at once."""
        if not self._busy.acquire(blocking=False):
            return
        try:
            now = time.monotonic()
            self._made, self._last = 0, now
            floor = self._floor if now < self._floor_until else 0
            if self._measure() > max(self.high, floor + self.budget // REGROW_PARTS):
                self._let_go()
            self._judge()
        except Exception:  # an actor's close that failed: never the caller's event's fault
            log.exception("letting go of memory for the budget failed")
        finally:
            self._busy.release()

    def _measure(self) -> int:
        rss = self._read()
        if rss is not None:
            self.rss = rss
        return self.rss

    def _let_go(self) -> None:
        for step in self._steps.cheap:
            step()
            if self._measure() <= self.low:
                return
        while True:
            dropped = self._steps.evict(EVICT_BATCH)
            self.evicted += dropped
            for step in self._steps.cheap:  # what the actors held: the heap, the pool
                step()
            if self._measure() <= self.low:
                return
            if not dropped:
                self._floor = self.rss
                self._floor_until = time.monotonic() + FUTILE_WAIT_S
                return

    def _judge(self) -> None:
        if self.rss > self.budget and not self.over:
            self.over = True
            log.warning("the actors busy with events hold more memory than the budget: "
                        "RSS %d MiB, --memory-budget %d MiB; serving them all the same",
                        self.rss >> 20, self.budget >> 20)
        elif self.rss <= self.budget:
            self.over = False
