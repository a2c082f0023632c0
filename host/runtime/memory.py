"""The process's memory between events: glibc's heap, and the instance pool's pages.

glibc's malloc_trim gives freed C heap back to the system, and mallopt tunes when it
does so by itself; both are None elsewhere (musl, macOS).
"""

from __future__ import annotations

import ctypes
import logging
import os
from collections.abc import Callable

from ..engine.pool import PoolMemory

log = logging.getLogger("wkhost")

try:
    _libc = ctypes.CDLL("libc.so.6")
    _malloc_trim: Callable[[int], int] | None = _libc.malloc_trim
    _mallopt: Callable[[int, int], int] | None = _libc.mallopt
except (OSError, AttributeError):
    _malloc_trim = _mallopt = None
# Dropped instances and connections leave the C heap fragmented: after this many drops,
# the janitor gives the free part back (without it, sleepers held far more than their
# instances' memory).
_TRIM_AFTER_DROPS = 32
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
# A big value (a journal of thousands of positions, a large result) passes through
# buffers of a few MiB: SQLite's group_concat, the Python str, the copy lowered into the
# guest. glibc's defaults serve each from a fresh mmap, or trim the heap under it as soon
# as it is freed, so every event paid page faults on all of it again. Buffers up to this
# size now come from the heap, and up to twice that of free heap top is kept for the next
# event; the janitor's malloc_trim still gives the rest back.
_MMAP_THRESHOLD_BYTES = 4 << 20
_TRIM_THRESHOLD_BYTES = 8 << 20


_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def resident_bytes() -> int | None:
    """This process's RSS, where /proc tells it (Linux), else None: one small read."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return None


def trim_heap() -> None:
    """Give the C heap's free part back to the system now (glibc only)."""
    if _malloc_trim is not None:
        _malloc_trim(0)


def tune_malloc() -> None:
    if _mallopt is not None:
        _mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD_BYTES)
        _mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD_BYTES)


class HeapTrim:
    """Counts the instances and connections dropped, and trims the heap every so many."""

    def __init__(self) -> None:
        self._dropped = 0

    def count(self, dropped: int) -> None:
        self._dropped += dropped

    def trim_if_due(self) -> None:
        if self._dropped >= _TRIM_AFTER_DROPS and _malloc_trim is not None:
            _malloc_trim(0)
            self._dropped = 0


def release_pool_memory(pool: PoolMemory | None, idle_for_s: float = 0.0) -> None:
    """Idle pooled slots give their pages back once no instance has lived for
    `idle_for_s` (sleepers all asleep, a quiet host): each keeps its pages otherwise, for
    good. Not sooner: a slot's first use after a release costs more than a fresh
    mapping would (its reset writes all its pages again), so a host between two bursts
    keeps its slots warm."""
    if pool is None:
        return
    try:
        pool.release_idle(idle_for_s)
    except OSError:
        log.exception("releasing the instance pool's idle memory failed")
