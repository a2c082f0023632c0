"""The one wasmtime Engine, the on-disk cache of compiled components, and the epoch ticker.

A cold compile of a componentize-py guest takes seconds; loading the serialized artifact
with `Component.deserialize_file` (mmap) takes a small fraction of that. Artifacts are
tied to the wasmtime version and to the engine flags (fuel and epochs change the
generated code), so the cache key holds all three.

The cache is shared by every server of this user by default ($XDG_CACHE_HOME/wkhost/
compiled, `default_cache_dir`), so a new data directory compiles nothing it has compiled
before. A compile is logged as it starts and ends, with the class and the time it took.
The instance pool, when the engine has one, is host/engine/pool.py's.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import threading
import time
import weakref
from importlib.metadata import version
from pathlib import Path

from wasmtime import Config, Engine, WasmtimeError
from wasmtime.component import Component

from ..errors import HostError
from . import component_file, fastconv
from .pool import InstancePool, pooled_engine

log = logging.getLogger("wkhost.engine")

ENGINE_FLAGS = "fuel1-epoch1"
# Artifacts the compile cache keeps, those used last (each is large): a cache shared by
# every server would otherwise keep every version of every class ever served.
KEEP_COMPILED = 24
# ... and, however many, every artifact used within this many seconds: the classes of the
# servers running now, which a count alone would evict from one another (a server of more
# classes than KEEP_COMPILED, or a test suite's many servers, compiled again and again).
KEEP_USED_WITHIN_S = 3600
EPOCH_TICK_MS = 10
# Ticks with no call into a guest before the ticker sleeps until the next call: a busy
# host, whose calls come and go between ticks, pays no wake-up per call.
IDLE_TICKS = 10
# Fuel per ms of CPU budget: the one calibration factor, what a guest Python busy loop
# burns per ms of CPU here (bench/calibrate_fuel.py). Code dominated by C inside the guest
# (json, re) burns less fuel per ms, recursion more, so a budget is exact for interpreted
# loops and only roughly right otherwise.
FUEL_PER_MS = 16_000_000


def make_engine(pool: InstancePool | None = None) -> Engine:
    """The engine every component of a host runs on: fuel and epochs on, and its
    instances from the pooling allocator `pool`, if given."""
    fastconv.install()  # before any Linker exists: only later host functions get it
    cfg = Config()
    cfg.consume_fuel = True
    cfg.epoch_interruption = True
    return Engine(cfg) if pool is None else pooled_engine(cfg, pool)


def cache_key(wasm: bytes) -> str:
    digest = hashlib.sha256(wasm).hexdigest()[:32]
    return f"{digest}-{ENGINE_FLAGS}-wasmtime{version('wasmtime')}"


def _known_key(wasm_path: Path, cache_dir: Path) -> tuple[str | None, Path]:
    """The cache key remembered for this exact file (path, size, mtime), if any.

    Hashing a component costs several times the mmap load itself, so the key is
    remembered per file version; any change of size or mtime hashes again."""
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
    $WKHOST_COMPILED_DIR, else $XDG_CACHE_HOME/wkhost/compiled, else
    ~/.cache/wkhost/compiled, beside the build cache (host/engine/build_cache.py, whose
    own is $WKHOST_CACHE_DIR)."""
    if env := os.environ.get("WKHOST_COMPILED_DIR"):
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "wkhost" / "compiled"


def component_protocols(wasm: Path) -> frozenset[str]:
    """The protocols the component at `wasm` declares in its `wk-protocols` custom
    section (none without one), read from the file's top-level section headers: no guest
    code runs and nothing is compiled. Raises HostError if `wasm` is not a component."""
    return component_file.component_protocols(wasm)


def load_served_component(engine: Engine, wasm: Path, cache_dir: Path,
                          label: str | None = None, *, prune: bool = True) -> Component:
    """`load_component` for a file named on the command line: a missing file or one that
    is not a component is a HostError that says so."""
    if not wasm.is_file():
        raise HostError(f"no component at {wasm}")
    try:
        return load_component(engine, wasm, cache_dir, label, prune=prune)
    except WasmtimeError as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else "unknown error"
        raise HostError(f"{wasm} is not a component this host can load ({first}); "
                        "build it with `wkhost build`") from None


def load_component(engine: Engine, wasm_path: Path, cache_dir: Path,
                   label: str | None = None, *, prune: bool = True) -> Component:
    """Deserialize from the cache, or compile once and store the artifact atomically.
    `label`: what the compile's log lines call it (default: the file's name). A compile
    prunes the cache after it, unless `prune` is False (the caller prunes once it has
    loaded all it needs: `compile_classes`)."""
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
        if prune:
            prune_cache(cache_dir)
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
        os.utime(path)  # its last use, which `prune_cache` keeps the latest of
    return component


def _store(component: Component, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}.{threading.get_ident()}")
    tmp.write_bytes(component.serialize())
    os.replace(tmp, path)


def prune_cache(cache_dir: Path) -> None:
    """Drop the artifacts past the KEEP_COMPILED used last that no one used within
    KEEP_USED_WITHIN_S. A server that loaded one that goes keeps its copy (an mmap
    outlives the file's name); one about to load it finds it gone, and compiles it again."""
    artifacts = sorted(cache_dir.glob("*.cwasm"), key=_mtime, reverse=True)
    used_since = time.time() - KEEP_USED_WITHIN_S
    for old in artifacts[KEEP_COMPILED:]:
        if _mtime(old) < used_since:
            old.unlink(missing_ok=True)


def _mtime(p: Path) -> float:
    try:
        return p.stat().st_mtime
    except FileNotFoundError:  # pruned meanwhile by another server
        return 0.0


def compile_classes(engine: Engine, classes: list[tuple[str, Path]], cache_dir: Path) -> None:
    """Compile each class's component that the cache does not hold yet, one after
    another, each logged as "compiling class NAME (SIZE MB)..." and "compiled class NAME
    in SECONDS s", then prunes the cache: once all are loaded (so used last), since a
    prune after each compile could drop a class of this list not loaded yet. Raises
    HostError as `load_served_component`."""
    for name, wasm in classes:
        load_served_component(engine, wasm, cache_dir, f"class {name}", prune=False)
    with contextlib.suppress(OSError):  # a cache this user cannot write still serves
        prune_cache(cache_dir)


def _compile(engine: Engine, data: bytes, label: str) -> Component:
    # Said before it starts: a compile takes seconds, and a server that says nothing
    # meanwhile looks hung.
    log.info("compiling %s (%.1f MB)...", label, len(data) / 1e6)
    started = time.perf_counter()
    component = Component(engine, data)
    log.info("compiled %s in %.1f s", label, time.perf_counter() - started)
    return component


class EpochTicker:
    """Advances the engine's epoch every EPOCH_TICK_MS while guest code may run, so
    wall-clock deadlines can trap; asleep while none has run for IDLE_TICKS ticks, so an
    idle host wakes for nothing. Every call into a guest is between `enter` and `leave`
    (engine/instance.py finds this ticker by its engine, `ticker_for`)."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._lock = threading.Lock()
        self._running = 0  # calls into a guest under way
        self._entered = 0  # calls begun, ever: a tick tells whether any began since the last
        self._asleep = False
        self._thread = threading.Thread(target=self._run, name="wk-epoch", daemon=True)
        _TICKERS[engine] = weakref.ref(self)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        # Under the lock: the thread clears `_wake` under it before it sleeps, and a
        # stop said between its tick and that clear would be cleared with it.
        with self._lock:
            self._stop.set()
            self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout=1)

    def enter(self) -> None:
        with self._lock:
            self._running += 1
            self._entered += 1
            if self._asleep:
                self._asleep = False
                self._wake.set()

    def leave(self) -> None:
        with self._lock:
            self._running -= 1

    @property
    def asleep(self) -> bool:
        """Is the ticker waiting for a call into a guest (tests)?"""
        return self._asleep

    def _run(self) -> None:
        quiet, seen = 0, -1
        while not self._stop.wait(EPOCH_TICK_MS / 1000):
            self._engine.increment_epoch()
            with self._lock:
                quiet = 0 if self._running or self._entered != seen else quiet + 1
                seen = self._entered
                if quiet >= IDLE_TICKS and not self._stop.is_set():
                    self._asleep = True
                    self._wake.clear()
            if quiet >= IDLE_TICKS:
                self._wake.wait()
                quiet = 0


class _NoTicker:
    """For an engine no host ticks (a unit test's or a tool's): its epoch stays put."""

    asleep = True

    def enter(self) -> None:
        pass

    def leave(self) -> None:
        pass


# Weak both ways: the ticker holds its engine, and a host that goes takes both.
_TICKERS: weakref.WeakKeyDictionary[Engine, weakref.ref[EpochTicker]] = \
    weakref.WeakKeyDictionary()


def ticker_for(engine: Engine) -> EpochTicker | _NoTicker:
    ref = _TICKERS.get(engine)
    ticker = ref() if ref is not None else None
    return ticker if ticker is not None else _NoTicker()


def ticks_for(ms: float) -> int:
    """Epoch ticks for a wall budget: rounded up, plus one for the partial tick in progress."""
    return max(1, int(-(-ms // EPOCH_TICK_MS)) + 1)
