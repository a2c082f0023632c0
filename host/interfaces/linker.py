"""The Linker: WASI (with nothing granted) plus one module per wkhost WIT interface."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from wasmtime import Engine, WasmtimeError
from wasmtime.component import Linker

from ..engine import fastconv
from . import actors, attributes, http, lifecycle, sqlite
from . import alarm as alarms
from .ports import E, HostPort

log = logging.getLogger("wkhost.linker")

HostFunc = Callable[..., Any]


def guard(fn: HostFunc) -> HostFunc:
    """Keep Python exceptions from crossing into wasmtime-py.

    wasmtime-py parks an exception raised by a host function in a process-wide global and
    re-raises it from whichever thread leaves wasm next: with two guests running, the spike
    saw some delivered to the wrong thread. A WasmtimeError travels through wasmtime's
    own error value instead, which stays on its thread. Either way the instance traps, which
    is right for a host function that failed unexpectedly.
    """

    def guarded(store: Any, *args: Any) -> Any:
        try:
            return fn(store, *args)
        except Exception as e:
            log.exception("host function %s failed", getattr(fn, "__name__", fn))
            raise WasmtimeError(f"host function failed: {type(e).__name__}: {e}") from None

    guarded.__name__ = getattr(fn, "__name__", "host_function")
    return guarded


def make_linker(engine: Engine, host: HostPort[E]) -> Linker:
    """A Linker for one component (one class): instantiate no other component with it.
    Its host functions reach the host through `host` (interfaces/ports.py) only.

    Its host functions are new objects, whose signatures fastconv then learns once (see
    `fastconv.pin_signature`); a component with other import types would be converted
    with the wrong ones."""
    linker = Linker(engine)
    linker.add_wasip2()

    def pinned_guard(fn: HostFunc) -> HostFunc:
        return fastconv.pin_signature(guard(fn))  # type: ignore[no-any-return]

    with linker.root() as root:
        sqlite.register(root, pinned_guard, host)
        alarms.register(root, pinned_guard, host)
        actors.register(root, pinned_guard, host)
        http.register(root, pinned_guard, host)
        lifecycle.register(root, pinned_guard, host)
        attributes.register(root, pinned_guard, host)
    return linker
