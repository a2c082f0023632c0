"""The Linker: WASI (with nothing granted) plus one module per wkhost WIT interface."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any, Protocol

from wasmtime import Engine, WasmtimeError
from wasmtime.component import Linker

from .. import metrics, tracing
from ..engine import fastconv
from ..errors import LeaseLost
from ..traps import TrapKind, host_function_failed
from . import actors, attributes, http, lifecycle, overlap, sqlite
from . import alarm as alarms
from . import log as guest_log
from . import metrics as guest_metrics
from . import trace as guest_trace
from .ports import E, HostPort

log = logging.getLogger("wkhost.linker")

HostFunc = Callable[..., Any]


class HostFunctionObserver(Protocol):
    """What the linker tells a host's Observer (events/observe.py) of each host function."""

    def host_function(self, interface: str, name: str, ns: int) -> None: ...


# The one host function whose Python name is not its WIT name's spelling.
_WIT_NAMES = {"fetch_for_guest": "fetch"}


def wit_name(python_name: str) -> str:
    """A host function's WIT name (a span's), from its Python one: `_exec_durable`,
    sqlite's `exec-durable`."""
    return _WIT_NAMES.get(python_name, python_name.strip("_").replace("_", "-"))


def guard(fn: HostFunc, interface: str = "host") -> HostFunc:
    """Keep Python exceptions from crossing into wasmtime-py, and count the calls of
    `interface` (host/metrics.py).

    wasmtime-py parks an exception raised by a host function in a process-wide global and
    re-raises it from whichever thread leaves wasm next: with two guests running, the spike
    saw some delivered to the wrong thread. A WasmtimeError travels through wasmtime's
    own error value instead, which stays on its thread. Either way the instance traps, which
    is right for a host function that failed unexpectedly.
    """
    name = getattr(fn, "__name__", "host_function")
    # Traced if on when the class was loaded (else no cost at all), and one that leaves
    # the actor: a call or a fetch (host/tracing.py says why not the others).
    if tracing.tracer is not None and (interface, wit_name(name)) in tracing.CLIENT_CALLS:
        fn = tracing.traced(fn, f"{interface}.{wit_name(name)}")
    if not metrics.ON:  # WKHOST_METRICS=off (bench/bench_observe.py): nor any clock read
        return _untimed(fn, name)
    # Taken once here: a call then costs two clock reads and one note (host/tally.py).
    note = metrics.HOST_CALL_TIMES.note
    clock = time.perf_counter

    def guarded(store: Any, *args: Any) -> Any:
        started = clock()
        try:
            return fn(store, *args)
        except Exception as e:
            raise _failed(name, e) from None
        finally:
            note(interface, clock() - started)

    guarded.__name__ = name
    return guarded


def _untimed(fn: HostFunc, name: str) -> HostFunc:
    """`guard`'s wrapper without the metrics' clock reads and note."""
    def guarded(store: Any, *args: Any) -> Any:
        try:
            return fn(store, *args)
        except Exception as e:
            raise _failed(name, e) from None

    guarded.__name__ = name
    return guarded


def _observed(guarded: HostFunc, interface: str, observer: HostFunctionObserver
              ) -> HostFunc:
    """`guarded`, its time told to `observer` (a host made with one): chosen at link
    time, so that a host without one pays nothing per call."""
    name = guarded.__name__
    clock = time.perf_counter_ns

    def observed(store: Any, *args: Any) -> Any:
        started = clock()
        try:
            return guarded(store, *args)
        finally:
            observer.host_function(interface, name, clock() - started)

    observed.__name__ = name
    return observed


def _failed(name: str, e: Exception) -> WasmtimeError:
    """The trap for a host function's exception. A lease lost under a durable write
    (--cluster: another node took the shard) is expected and not logged here: the event
    it fails reports it once (its trap's line, and the LeaseLost its caller is answered,
    events/lifecycle.py). Anything else is a failure, logged with its traceback."""
    if isinstance(e, LeaseLost):
        host_function_failed(TrapKind.LEASE_LOST)  # the event's end (events/lifecycle.py)
    else:
        log.exception("host function %s failed", name)
        host_function_failed()  # the trap it causes is the host's (TrapKind.HOST)
    return WasmtimeError(f"host function failed: {type(e).__name__}: {e}")


def make_linker(engine: Engine, host: HostPort[E],
                observer: HostFunctionObserver | None = None) -> Linker:
    """A Linker for one component (one class): instantiate no other component with it.
    Its host functions reach the host through `host` (interfaces/ports.py) only.

    Its host functions are new objects, whose signatures fastconv then learns once (see
    `fastconv.pin_signature`); a component with other import types would be converted
    with the wrong ones."""
    linker = Linker(engine)
    linker.add_wasip2()

    def pinned_guard(interface: str) -> Callable[[HostFunc], HostFunc]:
        def pinned(fn: HostFunc) -> HostFunc:
            guarded = guard(fn, interface)
            if observer is not None:
                guarded = _observed(guarded, interface, observer)
            return fastconv.pin_signature(guarded)  # type: ignore[no-any-return]
        return pinned

    with linker.root() as root:
        sqlite.register(root, pinned_guard("sqlite"), host)
        alarms.register(root, pinned_guard("alarm"), host)
        actors.register(root, pinned_guard("actors"), host)
        http.register(root, pinned_guard("http"), host)
        overlap.register(root, pinned_guard("overlap"), host)
        lifecycle.register(root, pinned_guard("lifecycle"), host)
        attributes.register(root, pinned_guard("attributes"), host)
        guest_log.register(root, pinned_guard("log"), host)
        guest_metrics.register(root, pinned_guard("metrics"), host)
        guest_trace.register(root, pinned_guard("trace"), host)
    return linker
