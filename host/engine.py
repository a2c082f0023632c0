"""The one wasmtime Engine, the on-disk cache of compiled components, and the epoch ticker.

A cold compile of an 18 MB componentize-py guest takes 3-4.5 s; loading the serialized
artifact with `Component.deserialize_file` (mmap) takes about 1.4 ms. Artifacts are tied
to the wasmtime version and to the engine flags (fuel and epochs change the generated
code), so the cache key holds all three.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

from wasmtime import Config, Engine
from wasmtime.component import Component

from . import fastconv

log = logging.getLogger("wkhost.engine")

ENGINE_FLAGS = "fuel1-epoch1"
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
    --part drain). The price: each live instance holds at least that much, and slots
    once used were seen to keep it resident after their instance went, `warm_slots`
    notwithstanding (docs/performance.md), which is why the pool is opt-in.
    """

    instances: int                       # live component instances at once
    max_memory_bytes: int                # a guest's linear memory cap
    keep_resident_bytes: int = 16 << 20  # the part of a guest's heap the reset keeps
    warm_slots: int = 4                  # idle slots kept resident for the next instance


def make_engine(pool: InstancePool | None = None) -> Engine:
    fastconv.install()  # before any Linker exists: only later host functions get it
    cfg = Config()
    cfg.consume_fuel = True
    cfg.epoch_interruption = True
    if pool is not None:
        _use_pool(cfg, pool)
    return Engine(cfg)


def _use_pool(cfg: Config, pool: InstancePool) -> None:
    # wasmtime-py 50 has no Python wrapper for the pooling allocator; its C API is in the
    # generated bindings. Limits per component are generous (a componentize-py guest has
    # one memory, about ten core instances and tables); the totals are what bound the
    # virtual memory reserved up front: one 4 GiB reservation per memory slot.
    from wasmtime import _ffi as ffi

    p = ffi.wasmtime_pooling_allocation_config_new()
    n = pool.instances
    ffi.wasmtime_pooling_allocation_config_total_component_instances_set(p, n)
    ffi.wasmtime_pooling_allocation_config_total_memories_set(p, n)
    ffi.wasmtime_pooling_allocation_config_total_core_instances_set(p, n * 32)
    ffi.wasmtime_pooling_allocation_config_total_tables_set(p, n * 32)
    ffi.wasmtime_pooling_allocation_config_total_stacks_set(p, n)
    ffi.wasmtime_pooling_allocation_config_max_core_instances_per_component_set(p, 32)
    ffi.wasmtime_pooling_allocation_config_max_memories_per_component_set(p, 1)
    ffi.wasmtime_pooling_allocation_config_max_tables_per_component_set(p, 32)
    ffi.wasmtime_pooling_allocation_config_table_elements_set(p, 100_000)
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


def load_component(engine: Engine, wasm_path: Path, cache_dir: Path) -> Component:
    """Deserialize from the cache, or compile once and store the artifact atomically."""
    key, memo = _known_key(wasm_path, cache_dir)
    if key is not None and key.endswith(f"wasmtime{version('wasmtime')}"):
        path = cache_dir / f"{key}.cwasm"
        if path.exists():
            try:
                return Component.deserialize_file(engine, str(path))
            except Exception as e:
                log.warning("cached component %s unusable (%s); recompiling", path.name, e)
    data = wasm_path.read_bytes()
    key = cache_key(data)
    _remember_key(memo, key)
    path = cache_dir / f"{key}.cwasm"
    if path.exists():
        try:
            return Component.deserialize_file(engine, str(path))
        except Exception as e:  # a truncated or foreign file: recompile rather than fail
            log.warning("cached component %s unusable (%s); recompiling", path.name, e)
    started = time.perf_counter()
    component = Component(engine, data)
    log.info("compiled %s in %.1f s", wasm_path.name, time.perf_counter() - started)
    cache_dir.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}.{threading.get_ident()}")
    tmp.write_bytes(component.serialize())
    os.replace(tmp, path)
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
