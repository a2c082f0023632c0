"""The call graph: who holds each actor, and who waits for whom.

It refuses two shapes that would otherwise deadlock or corrupt an instance: re-entry (A
calls B calls A: A's instance is mid-call) and a cycle across threads (A, in one thread,
waits on B while B, in another, waits on A). Both are refused at once.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

from ..errors import CallRefused, DeadlineExceeded
from ..types import ActorRef
from .event import Chain

if TYPE_CHECKING:
    from .actor_slot import ActorSlot


class CallGraph:
    """Who holds each actor, and who waits for whom; guarded by one lock."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._holder: dict[ActorRef, Chain] = {}

    def acquire(self, chain: Chain, slot: ActorSlot, timeout: float,
                wait: Callable[[], AbstractContextManager[object]] = contextlib.nullcontext,
                ) -> None:
        """Take `slot`'s actor for `chain`, within `timeout` seconds. Only if another event
        has it does the thread wait, inside `wait()` (which lets other events run)."""
        ref = slot.ref
        with self._lock:
            if ref in chain.stack:
                path = " -> ".join(str(r) for r in [*chain.stack, ref])
                raise CallRefused(f"re-entrant call refused: {path}")
            self._refuse_cycle(chain, ref)
            chain.waiting_for = ref
        acquired = timeout > 0 and slot.lock.acquire(blocking=False)
        if not acquired and timeout > 0:
            with wait():
                acquired = slot.lock.acquire(timeout=timeout)
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
