"""The one wasmtime Engine, the on-disk cache of compiled components, and the epoch ticker.

A cold compile of an 18 MB componentize-py guest takes 3-4.5 s; loading the serialized
artifact with `Component.deserialize_file` (mmap) takes about 1.4 ms. Artifacts are tied
to the wasmtime version and to the engine flags (fuel and epochs change the generated
code), so the cache key holds all three.

The cache is shared by every server of this user by default ($XDG_CACHE_HOME/wkhost/
compiled, `default_cache_dir`), so a new data directory compiles nothing it has compiled
before. A compile is logged as it starts and ends, with the class and the time it took.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import logging
import os
import threading
import time
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

from wasmtime import Config, Engine, WasmtimeError
from wasmtime.component import Component

from ..errors import HostError
from . import component_file, fastconv

log = logging.getLogger("wkhost.engine")

ENGINE_FLAGS = "fuel1-epoch1"
# Artifacts the compile cache keeps, those used last (about 40 MB each): a cache shared
# by every server would otherwise keep every version of every class ever served.
KEEP_COMPILED = 24
EPOCH_TICK_MS = 10
# Fuel per ms of CPU budget: the one calibration factor. A guest Python busy loop burns
# 16.0 M fuel per ms of CPU here (bench/calibrate_fuel.py: median of 7, 15.0-16.3); code
# dominated by C inside the guest (json, re) burns less fuel per ms, recursion more
# (11-22 M in the spike), so a budget is exact for interpreted loops and within about 2x
# otherwise.
FUEL_PER_MS = 16_000_000


@dataclass(frozen=True)
class InstancePool:
    """wasmtime's pooling allocator, sized for one host.

    Why: a fresh instance of a componentize-py guest writes to a few hundred pages of its
    copy-on-write heap image in its first calls. Each such write is a page fault, and
    when another thread of the host runs on the other core, a TLB shootdown (an IPI) as
    well: with two event threads busy, a cold wake cost 11 ms of CPU, half of it in the
    kernel. A pooled slot keeps the first `keep_resident_bytes` of its memory mapped and
    written between instances (reset in place when the instance goes), so the next
    instance of the same component faults on none of it: 6 ms (bench/bench_workflows.py
    --part drain). The price: each live instance holds at least that much, and a slot
    once used keeps it resident after its instance has gone, `warm_slots` notwithstanding,
    until `PoolMemory.release_idle` gives it back.
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
# instantiation waits at most one piece (about 0.6 ms each with 16 MiB resident).
_RELEASE_PIECE_BYTES = 4 << 30


class PoolMemory:
    """The pooling allocator's reserved memory, and giving its idle slots' pages back.

    Why: a pooled slot keeps its first `keep_resident_bytes` written when its instance
    goes (that is what spares the next instance its page faults), and wasmtime 50 has no
    call to release idle slots (wasmtime issue #14413). 10,000 sleepers, whose instances
    all go while they sleep, left 1.4 GiB resident.

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
        for start, end in self.regions:
            for piece in range(start, end, _RELEASE_PIECE_BYTES):
                with self._lock:
                    if self._live:
                        self._used_since_release = True
                        return False
                    _madvise(piece, min(_RELEASE_PIECE_BYTES, end - piece), _MADV_DONTNEED)
        return True

    def resident_bytes(self) -> int:
        """Resident bytes of the pool's regions, from /proc/self/smaps (slow: a few ms)."""
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


_ENGINE_MAKING = threading.Lock()


def make_engine(pool: InstancePool | None = None) -> Engine:
    fastconv.install()  # before any Linker exists: only later host functions get it
    cfg = Config()
    cfg.consume_fuel = True
    cfg.epoch_interruption = True
    if pool is None:
        return Engine(cfg)
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
    where no table pool ends) and the host crashed; the tables keep only about 5 MiB
    after 200 instances anyway.

    A merged neighbour that was mapped before is cut off again; if what remains is not
    exactly one reservation, nothing is released."""
    slot = max(_MEMORY_RESERVATION, pool.max_memory_bytes) + _MEMORY_GUARD
    expected = _MEMORY_GUARD + pool.instances * slot
    found = []
    for lo, hi in made:
        if hi - lo < expected:
            continue
        for old_lo, old_hi in before:
            if lo == old_lo and old_hi < hi:
                lo = old_hi
            elif hi == old_hi and lo < old_lo:
                hi = old_lo
        if hi - lo == expected:
            found.append((lo, hi))
    if len(found) != 1:
        log.warning("the instance pool's memory was not found in /proc/self/maps: idle "
                    "slots will keep their pages resident")
        return []
    return found


def _madvise(addr: int, length: int, advice: int) -> None:
    if _libc_madvise(addr, length, advice) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"madvise: {os.strerror(err)}")


_libc = ctypes.CDLL(None, use_errno=True)
_libc_madvise = _libc.madvise
_libc_madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
_libc_madvise.restype = ctypes.c_int


def _use_pool(cfg: Config, pool: InstancePool) -> None:
    # wasmtime-py 50 has no Python wrapper for the pooling allocator; its C API is in the
    # generated bindings. Limits per component are generous (a componentize-py guest has
    # one memory, about ten core instances and tables); the totals are what bound the
    # virtual memory reserved up front: one 4 GiB reservation per memory slot.
    from wasmtime import _ffi as ffi

    p = ffi.wasmtime_pooling_allocation_config_new()
    n = pool.instances
    cores, tables = _CORE_INSTANCES_PER_COMPONENT, _TABLES_PER_COMPONENT
    ffi.wasmtime_pooling_allocation_config_total_component_instances_set(p, n)
    ffi.wasmtime_pooling_allocation_config_total_memories_set(p, n)
    ffi.wasmtime_pooling_allocation_config_total_core_instances_set(p, n * cores)
    ffi.wasmtime_pooling_allocation_config_total_tables_set(p, n * tables)
    ffi.wasmtime_pooling_allocation_config_total_stacks_set(p, n)
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
    ffi.wasmtime_pooling_allocation_strategy_set(cfg.ptr(), p)
    ffi.wasmtime_pooling_allocation_config_delete(p)


def pool_exhausted(e: Exception) -> bool:
    """Did instantiation fail only because every pooled slot is in use?"""
    return "concurrent limit" in str(e)


def cache_key(wasm: bytes) -> str:
    digest = hashlib.sha256(wasm).hexdigest()[:32]
    return f"{digest}-{ENGINE_FLAGS}-wasmtime{version('wasmtime')}"


def _known_key(wasm_path: Path, cache_dir: Path) -> tuple[str | None, Path]:
    """The cache key remembered for this exact file (path, size, mtime), if any.

    Hashing an 18 MB component costs ~12 ms, ten times the mmap load itself, so the key
    is remembered per file version; any change of size or mtime hashes again."""
    st = wasm_path.stat()
    stamp = hashlib.sha256(
        f"{wasm_path.resolve()}:{st.st_size}:{st.st_mtime_ns}:{ENGINE_FLAGS}".encode()
    ).hexdigest()[:32]
    memo = cache_dir / "by-file" / stamp
    try:
        return memo.read_text().strip(), memo
    except OSError:
        return None, memo


def _remember_key(memo: Path, key: str) -> None:
    memo.parent.mkdir(parents=True, exist_ok=True)
    tmp = memo.with_suffix(f".tmp{os.getpid()}.{threading.get_ident()}")
    tmp.write_text(key)
    os.replace(tmp, memo)


def default_cache_dir() -> Path:
    """Where `wkhost serve` keeps compiled components unless told (--cache-dir):
    $XDG_CACHE_HOME/wkhost/compiled, else ~/.cache/wkhost/compiled, beside the build
    cache (host/build.py)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "wkhost" / "compiled"


def component_protocols(wasm: Path) -> frozenset[str]:
    """The protocols the component at `wasm` declares in its `wk-protocols` custom
    section (none without one), read from the file's top-level section headers: no guest
    code runs and nothing is compiled. Raises HostError if `wasm` is not a component."""
    return component_file.component_protocols(wasm)


def load_served_component(engine: Engine, wasm: Path, cache_dir: Path,
                          label: str | None = None) -> Component:
    """`load_component` for a file named on the command line: a missing file or one that
    is not a component is a HostError that says so."""
    if not wasm.is_file():
        raise HostError(f"no component at {wasm}")
    try:
        return load_component(engine, wasm, cache_dir, label)
    except WasmtimeError as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else "unknown error"
        raise HostError(f"{wasm} is not a component this host can load ({first}); "
                        "build it with `wkhost build`") from None


def load_component(engine: Engine, wasm_path: Path, cache_dir: Path,
                   label: str | None = None) -> Component:
    """Deserialize from the cache, or compile once and store the artifact atomically.
    `label`: what the compile's log lines call it (default: the file's name)."""
    key, memo = _known_key(wasm_path, cache_dir)
    if key is not None and key.endswith(f"wasmtime{version('wasmtime')}"):
        component = _cached(engine, cache_dir / f"{key}.cwasm")
        if component is not None:
            return component
    data = wasm_path.read_bytes()
    key = cache_key(data)
    _remember_key(memo, key)
    path = cache_dir / f"{key}.cwasm"
    component = _cached(engine, path)
    if component is None:
        component = _compile(engine, data, label or wasm_path.name)
        _store(component, path)
    return component


def _cached(engine: Engine, path: Path) -> Component | None:
    if not path.exists():
        return None
    try:
        component = Component.deserialize_file(engine, str(path))
    except Exception as e:  # a truncated or foreign file: recompile rather than fail
        log.warning("cached component %s unusable (%s); recompiling", path.name, e)
        return None
    with contextlib.suppress(OSError):  # a cache this user cannot write still serves
        os.utime(path)  # its last use, which `_prune` keeps the latest of
    return component


def _store(component: Component, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}.{threading.get_ident()}")
    tmp.write_bytes(component.serialize())
    os.replace(tmp, path)
    _prune(path.parent)


def _prune(cache_dir: Path) -> None:
    """Drop all but the KEEP_COMPILED artifacts used last. A server that loaded
    one that goes keeps its copy (an mmap outlives the file's name); one about to load it
    finds it unusable, and compiles it again."""
    artifacts = sorted(cache_dir.glob("*.cwasm"), key=_mtime, reverse=True)
    for old in artifacts[KEEP_COMPILED:]:
        old.unlink(missing_ok=True)


def _mtime(p: Path) -> float:
    try:
        return p.stat().st_mtime
    except FileNotFoundError:  # pruned meanwhile by another server
        return 0.0


def compile_classes(engine: Engine, classes: list[tuple[str, Path]], cache_dir: Path) -> None:
    """Compile each class's component that the cache does not hold yet, one after
    another, each logged as "compiling class NAME (18.5 MB)..." and "compiled class NAME
    in 4.2 s". Raises HostError as `load_served_component`."""
    for name, wasm in classes:
        load_served_component(engine, wasm, cache_dir, f"class {name}")


def _compile(engine: Engine, data: bytes, label: str) -> Component:
    # Said before it starts: a compile takes seconds, and a server that says nothing
    # meanwhile looks hung.
    log.info("compiling %s (%.1f MB)...", label, len(data) / 1e6)
    started = time.perf_counter()
    component = Component(engine, data)
    log.info("compiled %s in %.1f s", label, time.perf_counter() - started)
    return component


class EpochTicker:
    """Advances the engine's epoch every EPOCH_TICK_MS, so wall-clock deadlines can trap."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="wk-epoch", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=1)

    def _run(self) -> None:
        while not self._stop.wait(EPOCH_TICK_MS / 1000):
            self._engine.increment_epoch()


def ticks_for(ms: float) -> int:
    """Epoch ticks for a wall budget: rounded up, plus one for the partial tick in progress."""
    return max(1, int(-(-ms // EPOCH_TICK_MS)) + 1)
