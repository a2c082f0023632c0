"""The instance pool: wasmtime's pooling allocator, and giving its idle slots' pages back.

`pooled_engine` makes an Engine whose instances come from a pool sized by `InstancePool`;
its `PoolMemory` knows where the pool's memory lies and releases the pages that idle
slots keep resident (wasmtime has no call for that).
"""

from __future__ import annotations

import ctypes
import logging
import os
import threading
import time
from dataclasses import dataclass
from typing import Any

# wasmtime-py 50 has no Python wrapper for the pooling allocator; its C API is in the
# generated bindings.
from wasmtime import Config, Engine
from wasmtime import _ffi as ffi

log = logging.getLogger("wkhost.engine")


@dataclass(frozen=True)
class InstancePool:
    """wasmtime's pooling allocator, sized for one host.

    Why: a fresh instance of a componentize-py guest writes to a few hundred pages of its
    copy-on-write heap image in its first calls. Each such write is a page fault, and
    when another thread of the host runs on the other core, a TLB shootdown (an IPI) as
    well: with two event threads busy, much of a cold wake's CPU went to the kernel. A
    pooled slot keeps the first `keep_resident_bytes` of its memory mapped and written
    between instances (reset in place when the instance goes), so the next instance of
    the same component faults on none of it (bench/bench_workflows.py --part drain).
    The price: each live instance holds at least that much, and a slot once used keeps
    it resident after its instance has gone, `warm_slots` notwithstanding, until
    `PoolMemory.release_idle` gives it back.
    """

    instances: int                       # live component instances at once
    max_memory_bytes: int                # a guest's linear memory cap
    keep_resident_bytes: int = 16 << 20  # the part of a guest's heap the reset keeps
    warm_slots: int = 4                  # idle slots kept resident for the next instance


# Per pooled component instance: a componentize-py guest has one memory, about ten core
# instances and as many tables (the limits leave room).
_CORE_INSTANCES_PER_COMPONENT = 32
_TABLES_PER_COMPONENT = 32
_TABLE_ELEMENTS = 100_000
_MADV_DONTNEED = 4
# wasmtime 50's defaults on 64-bit hosts, which size each pooled memory slot.
_MEMORY_RESERVATION = 4 << 30
_MEMORY_GUARD = 32 << 20
# Released a slot-sized piece at a time, the lock let go between pieces, so that an
# instantiation waits at most one piece.
_RELEASE_PIECE_BYTES = 4 << 30


class PoolMemory:
    """The pooling allocator's reserved memory, and giving its idle slots' pages back.

    Why: a pooled slot keeps its first `keep_resident_bytes` written when its instance
    goes (that is what spares the next instance its page faults), and wasmtime 50 has no
    call to release idle slots (wasmtime issue #14413). Many sleepers, whose instances
    all go while they sleep, would otherwise keep all those pages resident.

    Why an madvise of our own is safe: an idle slot has been reset to the component's
    memory image where the image is mapped and to zeros elsewhere.
    MADV_DONTNEED gives exactly that again: a private page of the image's file mapping
    drops back to the file, an anonymous page to zero. What must never be released is a
    slot whose instance may still run, and which slot an instance holds is not
    exposed. So the whole region is released only while no instance of this engine
    lives: `enter` counts one before it is instantiated, under the lock the release
    holds, and `leave` runs once its `Instance` object is gone and can run no more.
    """

    def __init__(self, regions: list[tuple[int, int]]) -> None:
        self.regions = regions  # [start, end) of the memory pool's reservation
        self._lock = threading.RLock()  # re-entrant: a finalizer may run inside release
        self._live = 0
        self._idle_since = time.monotonic()
        self._used_since_release = False

    def enter(self) -> None:
        with self._lock:
            self._live += 1
            self._used_since_release = True

    def leave(self) -> None:
        with self._lock:
            self._live -= 1
            if not self._live:
                self._idle_since = time.monotonic()

    @property
    def live(self) -> int:
        return self._live

    def release_idle(self, idle_for_s: float = 0.0) -> bool:
        """Give the resident pages of every slot back, if no instance has lived for
        `idle_for_s`. True: done, or nothing to do; False: an instance lived (or not for
        long enough), or came during the release."""
        with self._lock:
            if self._live or time.monotonic() - self._idle_since < idle_for_s:
                return False
            if not self._used_since_release:
                return True
            self._used_since_release = False
        return all(self._release(start, end) for start, end in self.regions)

    def _release(self, start: int, end: int) -> bool:
        for piece in range(start, end, _RELEASE_PIECE_BYTES):
            with self._lock:
                if self._live:
                    self._used_since_release = True
                    return False
                _madvise(piece, min(_RELEASE_PIECE_BYTES, end - piece), _MADV_DONTNEED)
        return True

    def resident_bytes(self) -> int:
        """Resident bytes of the pool's regions, from /proc/self/smaps (slow)."""
        total, inside = 0, False
        try:
            with open("/proc/self/smaps") as f:
                for line in f:
                    first = line.split(" ", 1)[0]
                    if line[0] in "0123456789abcdef" and "-" in first:  # a mapping's header
                        lo, hi = (int(x, 16) for x in first.split("-"))
                        inside = any(s <= lo and hi <= e for s, e in self.regions)
                    elif inside and line.startswith("Rss:"):
                        total += int(line.split()[1]) * 1024
        except OSError:
            return 0
        return total


class PooledEngine(Engine):
    """An Engine whose instances come from its pooling allocator."""

    pool_memory: PoolMemory


def pool_memory(engine: Engine) -> PoolMemory | None:
    return engine.pool_memory if isinstance(engine, PooledEngine) else None


def pool_exhausted(e: Exception) -> bool:
    """Did instantiation fail only because every pooled slot is in use?"""
    return "concurrent limit" in str(e)


_ENGINE_MAKING = threading.Lock()


def pooled_engine(cfg: Config, pool: InstancePool) -> PooledEngine:
    """An engine of `cfg` with the pooling allocator `pool`, and its pool's memory found."""
    _use_pool(cfg, pool)
    with _ENGINE_MAKING:  # one at a time: the maps' difference is this engine's
        before = _mappings()
        engine = PooledEngine(cfg)
        made = _mappings() - before
    engine.pool_memory = PoolMemory(_pool_regions(made, before, pool))
    return engine


def _mappings() -> set[tuple[int, int]]:
    try:
        with open("/proc/self/maps") as f:
            return {tuple(int(x, 16) for x in line.split(" ", 1)[0].split("-"))  # type: ignore[misc]
                    for line in f}
    except OSError:  # not Linux: nothing to release, and nothing found
        return set()


def _pool_regions(made: set[tuple[int, int]], before: set[tuple[int, int]],
                  pool: InstancePool) -> list[tuple[int, int]]:
    """The memory pool's reservation among the mappings the engine made, by its exact
    size: a guard, then one 4 GiB reservation and a guard per slot (wasmtime 50's
    defaults for 64-bit hosts). Nothing else is released: a neighbour that the kernel
    merged into a new mapping would be released with it. That is how the table pool,
    once found by a size within rounding, took in a neighbouring mapping (it ended
    where no table pool ends) and the host crashed; the tables keep little resident
    anyway.

    A merged neighbour that was mapped before is cut off again; if what remains is not
    exactly one reservation, nothing is released."""
    slot = max(_MEMORY_RESERVATION, pool.max_memory_bytes) + _MEMORY_GUARD
    expected = _MEMORY_GUARD + pool.instances * slot
    found = [(lo, hi) for lo, hi in (_cut_neighbours(m, before) for m in made)
             if hi - lo == expected]
    if len(found) != 1:
        log.warning("the instance pool's memory was not found in /proc/self/maps: idle "
                    "slots will keep their pages resident")
        return []
    return found


def _cut_neighbours(mapping: tuple[int, int],
                    before: set[tuple[int, int]]) -> tuple[int, int]:
    """`mapping` without the mappings made before it that the kernel merged into it."""
    lo, hi = mapping
    for old_lo, old_hi in before:
        if lo == old_lo and old_hi < hi:
            lo = old_hi
        elif hi == old_hi and lo < old_lo:
            hi = old_lo
    return lo, hi


def _madvise(addr: int, length: int, advice: int) -> None:
    if _libc_madvise(addr, length, advice) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"madvise: {os.strerror(err)}")


_libc = ctypes.CDLL(None, use_errno=True)
_libc_madvise = _libc.madvise
_libc_madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
_libc_madvise.restype = ctypes.c_int


def _use_pool(cfg: Config, pool: InstancePool) -> None:
    p = ffi.wasmtime_pooling_allocation_config_new()
    _set_totals(p, pool.instances)
    _set_per_component(p, pool)
    ffi.wasmtime_pooling_allocation_strategy_set(cfg.ptr(), p)
    ffi.wasmtime_pooling_allocation_config_delete(p)


def _set_totals(p: Any, n: int) -> None:
    # The totals are what bound the virtual memory reserved up front: one 4 GiB
    # reservation per memory slot.
    cores, tables = _CORE_INSTANCES_PER_COMPONENT, _TABLES_PER_COMPONENT
    ffi.wasmtime_pooling_allocation_config_total_component_instances_set(p, n)
    ffi.wasmtime_pooling_allocation_config_total_memories_set(p, n)
    ffi.wasmtime_pooling_allocation_config_total_core_instances_set(p, n * cores)
    ffi.wasmtime_pooling_allocation_config_total_tables_set(p, n * tables)
    ffi.wasmtime_pooling_allocation_config_total_stacks_set(p, n)


def _set_per_component(p: Any, pool: InstancePool) -> None:
    # Generous: a componentize-py guest has one memory, about ten core instances and tables.
    cores, tables = _CORE_INSTANCES_PER_COMPONENT, _TABLES_PER_COMPONENT
    ffi.wasmtime_pooling_allocation_config_max_core_instances_per_component_set(p, cores)
    ffi.wasmtime_pooling_allocation_config_max_memories_per_component_set(p, 1)
    ffi.wasmtime_pooling_allocation_config_max_tables_per_component_set(p, tables)
    ffi.wasmtime_pooling_allocation_config_table_elements_set(p, _TABLE_ELEMENTS)
    ffi.wasmtime_pooling_allocation_config_max_component_instance_size_set(p, 4 << 20)
    ffi.wasmtime_pooling_allocation_config_max_core_instance_size_set(p, 4 << 20)
    ffi.wasmtime_pooling_allocation_config_max_memory_size_set(p, pool.max_memory_bytes)
    ffi.wasmtime_pooling_allocation_config_max_unused_warm_slots_set(p, pool.warm_slots)
    ffi.wasmtime_pooling_allocation_config_linear_memory_keep_resident_set(
        p, pool.keep_resident_bytes)
    ffi.wasmtime_pooling_allocation_config_table_keep_resident_set(p, 1 << 20)
