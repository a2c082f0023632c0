"""One live instance of a component, serving one actor at a time, with per-event budgets.

By default an instance serves one id for its whole life, so a guest's module globals
never leak between actors. A class served with `--reuse-instances` hands an instance that
ended cleanly to its next new actor (`spare_instances.py`), whose on-init comes first.

Any trap (fuel, epoch, a guest exception, memory, a host-side failure) leaves the
instance and its Store unusable ("cannot enter component instance"), so the caller drops
this object after any `GuestFailed`.

The events (events/) touch wasmtime only through here: they name its Engine and Linker
through this module (re-exported), and hear of its failures as this module's errors.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable
from typing import Any

from wasmtime import Engine as Engine
from wasmtime import Store, WasiConfig, WasmtimeError
from wasmtime.component import Component, ExportIndex, Func
from wasmtime.component import Linker as Linker

from ..errors import BudgetExceeded, GuestFailed
from ..traps import TrapKind, TrapReason, take_host_failure
from . import guest_output
from .components import ticker_for, ticks_for
from .guest_output import OutputPipe
from .pool import pool_exhausted, pool_memory

log = logging.getLogger("wkhost.instance")

HANDLER = "wk:host/handler@0.1.0"
EXPORTS = ("on-init", "on-alarm", "handle")


class ComponentExports:
    """Export indices resolved once on the Component, valid for all its instances."""

    def __init__(self, component: Component) -> None:
        self.component = component
        iface = component.get_export_index(HANDLER)
        if iface is None:
            raise GuestFailed(f"the component does not export {HANDLER}: build it with "
                              "`wkhost build`, which targets the wkhost world")
        self.index: dict[str, ExportIndex] = {}
        for name in EXPORTS:
            index = component.get_export_index(name, iface)
            if index is None:
                raise GuestFailed(f"the component's {HANDLER} has no {name!r}: rebuild it "
                                  "against this host's WIT with `wkhost build`")
            self.index[name] = index


class PoolExhausted(Exception):
    """An instantiation failed only because every pooled instance slot is in use."""


# Where a guest's stdout and stderr go: `output(data, full)`, after each call into it
# (full: it wrote past the cap, where the pipe's writes fail), or, without the pipe (no libc
# to hand wasmtime), `output(data)` at each write, whose answer may fail it (an errno).
Output = Callable[..., int | None]


class _Live:
    """How many Instances (each a wasmtime Store with its instance) live in this process:
    made, and not yet collected."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.count = 0

    def made(self) -> None:
        with self._lock:
            self.count += 1

    def gone(self) -> None:
        with self._lock:
            self.count -= 1


LIVE = _Live()


class Instance:
    def __init__(self, engine: Engine, linker: Linker, exports: ComponentExports,
                 memory_limit: int, output: Output, output_cap: int = 16 << 10) -> None:
        store = Store(engine)
        # The callbacks reach the output through this list, not through self: they live in
        # wasmtime-py's global table until the Store goes, so a reference to this object
        # there would keep it, and its Store, alive for good.
        self._output = [output]
        self._pipe: OutputPipe | None = None
        self._output_cap = output_cap
        store.set_wasi(self._wasi())  # without it the first WASI call aborts the process
        store.set_limits(memory_size=memory_limit)
        # Far more than instantiation and a first call burn: the event's budget is set
        # at each call.
        store.set_fuel(50_000_000)
        store.set_epoch_deadline(ticks_for(30_000))  # must be set before instantiate
        self.store = store
        self._ticker = ticker_for(engine)  # its epoch moves only while a guest runs
        self.actors_served = 0  # how many actors it has served (reuse is bounded)
        self.fuel_at_trap = 0  # the fuel left when a call trapped (for the metrics)
        self.trap: TrapReason | None = None  # why a call trapped, as wasmtime says
        LIVE.made()
        weakref.finalize(self, LIVE.gone)
        pool = pool_memory(engine)
        if pool is not None:
            # Counted before it takes a pooled slot, until this object is gone: while it
            # counts, the pool's idle pages are not released under it.
            pool.enter()
            weakref.finalize(self, pool.leave)
        self.funcs = self._instantiate(linker, exports)

    def _wasi(self) -> WasiConfig:
        """No preopens, no environment, no argv, no sockets; stdout and stderr to the
        pipe, or to `output` at each write where there is no pipe."""
        wasi = WasiConfig()
        if guest_output.available():
            self._pipe = OutputPipe(self._output_cap)
            self._pipe.attach(wasi)
        else:
            sink = self._output
            wasi.stdout_custom = lambda data: sink[0](data)
            wasi.stderr_custom = lambda data: sink[0](data)
        return wasi

    def _instantiate(self, linker: Linker, exports: ComponentExports) -> dict[str, Func]:
        self._ticker.enter()
        try:
            instance = linker.instantiate(self.store, exports.component)
        except WasmtimeError as e:
            if pool_exhausted(e):
                raise PoolExhausted(str(e)) from None
            raise
        finally:
            self._ticker.leave()
        funcs: dict[str, Func] = {}
        for name, index in exports.index.items():
            func = instance.get_func(self.store, index)
            assert func is not None, name
            funcs[name] = func
        return funcs

    def set_output(self, output: Output) -> None:
        """Send the guest's stdout and stderr to `output` from now on (a reused instance
        writes to its new actor's log)."""
        self._output[0] = output

    @property
    def usable(self) -> bool:
        """False once a trap has killed the Store."""
        return bool(self.funcs)

    def call(self, name: str, args: tuple[Any, ...], fuel: int, wall_ms: float) -> Any:
        """Call an export within the budgets; a trap raises GuestFailed / BudgetExceeded,
        and leaves its reason in `trap`."""
        store = self.store
        store.set_fuel(fuel)
        store.set_epoch_deadline(ticks_for(wall_ms))
        self._ticker.enter()
        try:
            return self.funcs[name](store, *args)
        except WasmtimeError as e:
            self.fuel_at_trap = _fuel_left(store)
            # The Store is dead: let it go now. A traceback that keeps this frame alive
            # (a test runner's, a log's) must not keep the Store and its WASI threads.
            self.funcs = {}
            del self.store
            self.trap = classify_trap(e, take_host_failure())
            raise failure(self.trap) from None
        finally:
            self._ticker.leave()
            self._drain_output()

    def _drain_output(self) -> None:
        pipe = self._pipe
        if pipe is not None:
            data = pipe.drain()
            if data:  # past the cap: kept up to it, and the writes past the pipe failed
                self._output[0](data, len(data) >= self._output_cap)

    def set_wall(self, wall_ms: float) -> None:
        """From inside a call into the guest (a host function): its code traps `wall_ms`
        from now instead (lifecycle.narrow-deadline)."""
        self.store.set_epoch_deadline(ticks_for(wall_ms))

    def fuel_used(self, budget: int) -> int:
        return budget - self.store.get_fuel()


def _fuel_left(store: Store) -> int:
    try:
        return store.get_fuel()
    except WasmtimeError:
        return 0


# The messages of the budgets' cuts: what the log, the caller and `lifecycle.last-trap`
# say. Code tells the cuts apart by their TrapKind (host/traps.py), never by these.
CPU_BUDGET = "the event used its CPU budget (--cpu-budget-ms)"
WALL_CLOCK = "the event used its wall-clock budget (--wall-budget-ms)"
# A wall-clock trap while the deadline the guest set itself was the one its Store had
# (events/trapped.py). The guest SDK spells it too, as wkguest.lifecycle.NARROWED_REASON,
# for guests that read `last-trap`'s text rather than `last-trap-info`'s kind.
NARROWED = "the event passed the deadline it set itself (lifecycle.narrow-deadline)"

# wasmtime's trap codes, as the text of its error: wasmtime-py's component calls give
# no trap code (Func.__call__ raises a WasmtimeError from a wasmtime_error_t, and
# `Trap.trap_code` reads only a wasm_trap_t), so this table is the one place where the
# host reads a third party's words to tell traps apart.
_WASMTIME_CODES = (("all fuel consumed", TrapKind.CPU, CPU_BUDGET),
                   ("wasm trap: interrupt", TrapKind.WALL, WALL_CLOCK))
_BUDGETS = frozenset((TrapKind.CPU, TrapKind.WALL, TrapKind.NARROWED_DEADLINE))


def classify_trap(e: WasmtimeError, host_failed: TrapKind | None = None) -> TrapReason:
    """Why a call trapped, from wasmtime's error and the kind of the trap a host function
    under it made, if one failed (host/traps.py's take_host_failure)."""
    text = str(e)
    if host_failed is None:
        for code, kind, message in _WASMTIME_CODES:
            if code in text:
                return TrapReason(kind, message)
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    last = lines[-1] if lines else "unknown trap"
    return TrapReason(TrapKind.GUEST if host_failed is None else host_failed,
                      f"guest trapped: {last}")


def failure(trap: TrapReason) -> GuestFailed:
    """What a trap raises: a budget's cut is BudgetExceeded (503), any other GuestFailed."""
    if trap.kind in _BUDGETS:
        return BudgetExceeded(trap.message)
    return GuestFailed(trap.message)
