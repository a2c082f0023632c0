"""Instances kept for the next new actor of a class served with `--reuse-instances`.

Why: a new actor otherwise pays a new instance (the Store, the pooled slot's set-up,
wasmtime's lazy table entries) and the old one's drop (the pooled slot's reset), and its
guest runs cold code for the first time. For a workflow, one actor per instance, that
was a large share of its CPU.

What the guest may then see: its module globals outlive an actor. The actor object does
not: the SDK makes a new one at on-init, which always comes first in a reused instance,
since only the creation of an actor takes a spare. A trapped instance is never kept.
"""

from __future__ import annotations

import threading
import time

from .instance import Instance

# An instance serves at most this many actors, so that whatever a guest's heap keeps
# growing (fragmentation, a module-level cache) is bounded.
MAX_ACTORS_PER_INSTANCE = 256


class SpareInstances:
    def __init__(self, per_class: int) -> None:
        self.per_class = per_class
        self._lock = threading.Lock()
        self._spares: dict[str, list[tuple[float, Instance]]] = {}
        self.taken = 0  # counters for tests and benchmarks
        self.kept = 0

    def offer(self, cls: str, inst: Instance | None) -> None:
        """Keep `inst`, which its actor let go, for the class's next new actor; or let it go
        (the caller's reference is the last one, so the Store drops then)."""
        if inst is None or not inst.usable or inst.actors_served >= MAX_ACTORS_PER_INSTANCE:
            return
        with self._lock:
            spares = self._spares.setdefault(cls, [])
            if len(spares) < self.per_class:
                spares.append((time.monotonic(), inst))
                self.kept += 1

    def take(self, cls: str) -> Instance | None:
        with self._lock:
            spares = self._spares.get(cls)
            if not spares:
                return None
            self.taken += 1
            return spares.pop()[1]  # the most recent: its pages are the likeliest resident

    def drop_idle(self, idle_for_s: float) -> int:
        """Let go of spares unused for `idle_for_s` (0: all of them). Returns how many."""
        cutoff = time.monotonic() - idle_for_s if idle_for_s > 0 else float("inf")
        gone: list[Instance] = []
        with self._lock:
            for spares in self._spares.values():
                gone += [i for t, i in spares if t <= cutoff]
                spares[:] = [(t, i) for t, i in spares if t > cutoff]
        n = len(gone)
        gone.clear()  # dropped here, outside the lock: a pooled slot's reset takes a while
        return n

    def count(self) -> int:
        with self._lock:
            return sum(len(s) for s in self._spares.values())
