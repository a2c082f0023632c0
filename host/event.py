"""What the host knows about the event a thread is running, and the call graph.

A host function learns which actor called it from the thread: a guest only runs on the
thread that called into it, and a nested `actors.call` pushes the callee on the same
thread's stack and pops it when the callee returns. So the top of the thread's stack is
always the actor whose guest is executing.

The call graph refuses two shapes that would otherwise deadlock or corrupt an instance:
re-entry (A calls B calls A: A's instance is mid-call) and a cycle across threads (A, in
one thread, waits on B while B, in another, waits on A). Both are refused at once.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .errors import CallRefused, DeadlineExceeded
from .types import ActorRef

if TYPE_CHECKING:
    from .registry import ActorSlot


@dataclass
class Chain:
    """One chain of nested calls, on one thread: the actors it holds, in call order."""

    stack: list[ActorRef] = field(default_factory=list)
    waiting_for: ActorRef | None = None


@dataclass
class Event:
    slot: ActorSlot
    kind: str                  # "init" | "alarm" | "request"
    deadline: float            # time.monotonic() when the event's wall budget runs out
    chain: Chain
    delete_requested: bool = False
    alarm_touched: bool = False   # the guest set or cleared its alarm in this event

    def remaining_s(self) -> float:
        return self.deadline - time.monotonic()


_local = threading.local()


def stack() -> list[Event]:
    s: list[Event] | None = getattr(_local, "events", None)
    if s is None:
        s = _local.events = []
    return s


def current() -> Event:
    return stack()[-1]


class CallGraph:
    """Who holds each actor, and who waits for whom; guarded by one lock."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._holder: dict[ActorRef, Chain] = {}

    def acquire(self, chain: Chain, slot: ActorSlot, timeout: float) -> None:
        ref = slot.ref
        with self._lock:
            if ref in chain.stack:
                path = " -> ".join(str(r) for r in [*chain.stack, ref])
                raise CallRefused(f"re-entrant call refused: {path}")
            self._refuse_cycle(chain, ref)
            chain.waiting_for = ref
        acquired = timeout > 0 and slot.lock.acquire(timeout=timeout)
        with self._lock:
            chain.waiting_for = None
            if acquired:
                self._holder[ref] = chain
                chain.stack.append(ref)
        if not acquired:
            raise DeadlineExceeded(f"{ref} stayed busy until the event's deadline")

    def _refuse_cycle(self, chain: Chain, ref: ActorRef) -> None:
        holder = self._holder.get(ref)
        hops = 0
        while holder is not None and hops < 10_000:
            if holder is chain:
                raise CallRefused(f"call to {ref} refused: it waits, in another thread, "
                                  "on an actor of this call chain (a cycle)")
            if holder.waiting_for is None:
                return
            holder = self._holder.get(holder.waiting_for)
            hops += 1

    def release(self, chain: Chain, slot: ActorSlot) -> None:
        with self._lock:
            chain.stack.pop()
            self._holder.pop(slot.ref, None)
        slot.lock.release()
