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
from importlib.metadata import version
from pathlib import Path

from wasmtime import Config, Engine
from wasmtime.component import Component

log = logging.getLogger("wkhost.engine")

ENGINE_FLAGS = "fuel1-epoch1"
EPOCH_TICK_MS = 10
# Fuel per ms of CPU budget. Guest Python burns 11-22 M fuel per ms of CPU on this machine
# (measured in bench/calibrate_fuel.py, which prints the current figure); 15 M sits in the
# middle, so `--cpu-budget-ms 50` cuts a busy loop after roughly 35-70 ms of CPU.
FUEL_PER_MS = 15_000_000


def make_engine() -> Engine:
    cfg = Config()
    cfg.consume_fuel = True
    cfg.epoch_interruption = True
    return Engine(cfg)


def cache_key(wasm: bytes) -> str:
    digest = hashlib.sha256(wasm).hexdigest()[:32]
    return f"{digest}-{ENGINE_FLAGS}-wasmtime{version('wasmtime')}"


def load_component(engine: Engine, wasm_path: Path, cache_dir: Path) -> Component:
    """Deserialize from the cache, or compile once and store the artifact atomically."""
    data = wasm_path.read_bytes()
    path = cache_dir / f"{cache_key(data)}.cwasm"
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
        self._thread.join(timeout=1)

    def _run(self) -> None:
        while not self._stop.wait(EPOCH_TICK_MS / 1000):
            self._engine.increment_epoch()


def ticks_for(ms: float) -> int:
    """Epoch ticks for a wall budget: rounded up, plus one for the partial tick in progress."""
    return max(1, int(-(-ms // EPOCH_TICK_MS)) + 1)
