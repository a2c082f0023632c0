"""The run gate: at most so many events run host or guest code at once (`RunGate`), and
what a guest statement's thread lends while the statement runs long (`statement_loan`).
"""

from __future__ import annotations

import contextlib
import threading
from collections import deque
from collections.abc import Callable, Iterator

from .executor import EventExecutor

_local = threading.local()


class RunGate:
    """At most `slots` events run host or guest code at once, whatever the number of event
    threads; a thread gives its slot up while it waits (a lock, the network, an fsync)
    and while a SQLite statement of its runs long.

    Why: the event threads are many so that waiting events do not hold up the others,
    but running ones fight: with many more threads than cores, a cold wake cost far more
    CPU (GIL hand-offs, and a TLB shootdown for each copy-on-write fault of a fresh
    instance while another thread of the host runs on the other core).

    A thread back from a wait goes ahead of the events that have not started: finishing
    the events in flight first keeps fewer of them open at once (instances, connections,
    threads waiting for the GIL). In first-come order, one whose fsync was done queued
    behind every event that came meanwhile, which cost more CPU per workflow under
    load. Not always ahead, though: while both kinds wait, every
    other slot goes to a new event, so that events which keep waiting and coming back
    (a guest's statements that each run long) cannot hold every new one off. A freed
    slot is handed to the next thread directly, so that no thread that comes later
    takes it first.

    A nested call runs on its caller's thread, inside the caller's slot. A thread never
    waits for a lock while it holds a slot, so the gate adds no deadlock to the call
    graph's: it waits for the slot only after taking its actor's lock.
    """

    def __init__(self, slots: int) -> None:
        self._lock = threading.Lock()
        self._free = slots
        # Each waiting thread's own lock, held until a slot is handed to it.
        self._resuming: deque[threading.Lock] = deque()
        self._new: deque[threading.Lock] = deque()
        self._resumer_went_last = False

    @contextlib.contextmanager
    def running(self) -> Iterator[None]:
        """Hold a slot for this thread's outermost event (nested events share it)."""
        depth: int = getattr(_local, "gate_depth", 0)
        if depth == 0:
            self._take(resuming=False)
        _local.gate_depth = depth + 1
        try:
            yield
        finally:
            _local.gate_depth = depth
            if depth == 0:
                self._give()

    @contextlib.contextmanager
    def waiting(self) -> Iterator[None]:
        """Give this thread's slot to another event while it waits."""
        if getattr(_local, "gate_depth", 0) == 0 or getattr(_local, "gate_waiting", False):
            yield
            return
        _local.gate_waiting = True
        self._give()
        try:
            yield
        finally:
            self._take(resuming=True)
            _local.gate_waiting = False

    def held_here(self) -> bool:
        """This thread holds a slot, and is not in a wait that gave it up."""
        return getattr(_local, "gate_depth", 0) > 0 and not getattr(_local, "gate_waiting", False)

    def lend(self) -> None:
        """Give up, for another event, the slot of a thread that is stuck in a long call
        (storage/watch.py): called by another thread, on its behalf."""
        self._give()

    def reclaim(self) -> None:
        """On the thread whose slot was lent, once its call has returned."""
        self._take(resuming=True)

    def _take(self, resuming: bool) -> None:
        with self._lock:
            if self._free:  # then nobody waits: _give hands a slot on while anyone does
                self._free -= 1
                return
            handed = threading.Lock()
            handed.acquire()
            (self._resuming if resuming else self._new).append(handed)
        handed.acquire()  # released by _give, with the slot

    def _give(self) -> None:
        with self._lock:
            if self._resuming and not (self._new and self._resumer_went_last):
                self._resumer_went_last = True
                self._resuming.popleft().release()
            elif self._new:
                self._resumer_went_last = False
                self._new.popleft().release()
            else:
                self._free += 1



def statement_loan(gate: RunGate, executor: EventExecutor
                   ) -> Callable[[], Callable[[], None]] | None:
    """On a guest statement's thread: what it lends should it run long (its run slot,
    its place among the working event threads), as storage/watch.py's `Loan`."""
    slot, place = gate.held_here(), executor.counted_here()
    if not (slot or place):
        return None

    def lend() -> Callable[[], None]:
        if place:
            executor.lend_place()
        if slot:
            gate.lend()
        return lambda: _take_back(gate, executor, slot, place)

    return lend


def _take_back(gate: RunGate, executor: EventExecutor, slot: bool, place: bool) -> None:
    if place:
        executor.reclaim_place()
    if slot:
        gate.reclaim()
