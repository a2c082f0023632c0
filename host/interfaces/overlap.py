"""The `overlap` interface: fetches and actor calls that an event starts without waiting
for each, run on the host's threads, and `wait-any` for whichever ends first (what a
guest gets is in wit/world.wit).

Each request is what the blocking form does (interfaces/http.py's fetch, actors.py's
call), on a thread of `_pool()`; the event's thread waits in `wait-any` only, inside
`long_wait`, so its run slot serves other events meanwhile. A request's failure is its
`ended` case, of the blocking form's kinds; nothing of it goes to `last-error`.
"""

from __future__ import annotations

import concurrent.futures
import itertools
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from wasmtime.component import Variant

from ..errors import HostError, call_kind
from ..fetch import FetchError, FetchRequest, fetch
from ..fetch.via import fetch_via
from ..types import Sender
from .actors import error_kind
from .ports import E, HostPort
from .records import record

# Requests one event may have in flight at once: each holds a thread of the pool while
# it runs, so one guest's fan-out cannot take every thread from the others.
MAX_IN_FLIGHT = 64
# The pool's threads, for every event of the process. Past them, a request waits for a
# thread (bounded by its own deadline, as any wait is).
POOL_THREADS = 256
# Requests of one class in flight at once, its events' and those they left behind (an
# event's end abandons its requests, which run on to their deadline): a class whose
# events start requests and end cannot take the pool from the other classes.
MAX_PER_CLASS = POOL_THREADS // 2
THREAD_PREFIX = "wk-overlap"

_pool_lock = threading.Lock()
_the_pool: concurrent.futures.ThreadPoolExecutor | None = None
_per_class: dict[str, int] = {}  # requests in flight by class, under _pool_lock


def _pool() -> concurrent.futures.ThreadPoolExecutor:
    global _the_pool
    with _pool_lock:
        if _the_pool is None:
            _the_pool = concurrent.futures.ThreadPoolExecutor(
                max_workers=POOL_THREADS, thread_name_prefix=THREAD_PREFIX)
        return _the_pool


# Handles are never reused within the process (but past 2^32): a guest that keeps an
# abandoned request's end for its loop (wkguest/overlap_loop.py) can never take it for
# another event's request.
_handles = itertools.count(1)


class InFlight:
    """One event's started requests, by handle, until `wait-any` gives their end."""

    __slots__ = ("futures",)

    def __init__(self) -> None:
        self.futures: dict[int, Future[Variant]] = {}

    def add(self, future: Future[Variant]) -> int:
        handle = next(_handles) & 0xFFFF_FFFF
        self.futures[handle] = future
        return handle


def _in_flight(ev: Any) -> InFlight | str:
    """`ev`'s requests in flight, or why it may start no more (the WIT error)."""
    flight: InFlight | None = ev.in_flight
    if flight is None:
        flight = ev.in_flight = InFlight()
    if len(flight.futures) >= MAX_IN_FLIGHT:
        return f"refused: {MAX_IN_FLIGHT} requests are in flight already, the most an " \
               "event may have"
    return flight


def _submit(cls: str, fn: Callable[..., Variant], *args: Any) -> Future[Variant] | str:
    """`fn(*args)` on the pool, counted against class `cls`; or why not (the WIT
    error)."""
    with _pool_lock:
        if _per_class.get(cls, 0) >= MAX_PER_CLASS:
            return f"refused: class {cls!r} has {MAX_PER_CLASS} requests in flight " \
                   "already (its events' and those they left), the most a class may have"
        _per_class[cls] = _per_class.get(cls, 0) + 1
    future = _pool().submit(fn, *args)
    future.add_done_callback(lambda _f: _done(cls))
    return future


def _done(cls: str) -> None:
    with _pool_lock:
        left = _per_class[cls] - 1
        if left:
            _per_class[cls] = left
        else:
            del _per_class[cls]


def _fetched(request: FetchRequest, via: Callable[[FetchRequest], Any],
             cut: Callable[[], bool]) -> Variant:
    try:
        resp = via(request)
    except FetchError as e:
        kind = "narrowed-deadline" if e.kind == "timeout" and cut() else e.kind
        return Variant("fetch-failed", record(kind=kind, message=str(e)))
    return Variant("fetched", record(status=resp.status, headers=resp.headers,
                                     body=resp.body.decode("latin-1")))


def _called(call: Callable[[], Any]) -> Variant:
    try:
        return Variant("called", call())
    except HostError as e:
        return _call_failed(e)
    except Exception as e:  # the host's own failure: the blocking call would trap
        return Variant("call-failed", record(kind="other", message=f"error: {e!r}"))


def _call_failed(e: HostError) -> Variant:
    failed = record(kind=error_kind(e, lambda: False), message=f"{call_kind(e)}: {e}")
    return Variant("call-failed", failed)


def _ended_now(ended: Variant) -> Future[Variant]:
    done: Future[Variant] = Future()
    done.set_result(ended)
    return done


def register(root: Any, guard: Any, host: HostPort[E]) -> None:
    with root.add_instance("wk:host/overlap@0.1.0") as iface:
        iface.add_func("start-fetch", guard(_start_fetch(host)))
        iface.add_func("start-call", guard(_start_call(host)))
        iface.add_func("wait-any", guard(_wait_any(host)))


def _start_fetch(host: HostPort[E]) -> Callable[..., Any]:
    policy, current = host.fetch_policy, host.current_event

    def start_fetch(_store: Any, req: Any) -> Any:
        ev = current()
        flight = _in_flight(ev)
        if isinstance(flight, str):
            return flight
        try:
            body = req.body.encode("latin-1")
        except UnicodeEncodeError:
            failed = record(kind="invalid", message="invalid: the body is not "
                            "bytes-as-Latin-1 (use wkguest's overlap.fetch)")
            return flight.add(_ended_now(Variant("fetch-failed", failed)))
        request = FetchRequest(method=req.method, url=req.url, headers=list(req.headers),
                               body=body, timeout_ms=getattr(req, "timeout-ms"))
        bound = ev.bound

        def via(r: FetchRequest) -> Any:
            return fetch(r, policy, deadline=bound) if policy.via is None \
                else fetch_via(r, policy, policy.via, bound)
        started = _submit(ev.slot.ref.cls, _fetched, request, via, ev.cut_by_limit)
        return started if isinstance(started, str) else flight.add(started)
    return start_fetch


def _start_call(host: HostPort[E]) -> Callable[..., Any]:
    current, actor_ref, call_beside = host.current_event, host.actor_ref, host.call_beside

    def start_call(_store: Any, target: Any, req: Any, timeout_ms: int | None) -> Any:
        ev = current()
        flight = _in_flight(ev)
        if isinstance(flight, str):
            return flight
        deadline = ev.bound
        if timeout_ms is not None:
            deadline = min(deadline, time.monotonic() + timeout_ms / 1000)
        try:
            ref = actor_ref(getattr(target, "class"), target.id)
        except HostError as e:
            return flight.add(_ended_now(_call_failed(e)))
        sender = Sender.of_actor(ev.slot.ref)
        started = _submit(ev.slot.ref.cls, _called,
                          lambda: call_beside(ref, req, sender, ev, deadline))
        return started if isinstance(started, str) else flight.add(started)
    return start_call


def _wait_any(host: HostPort[E]) -> Callable[..., Any]:
    current, long_wait = host.current_event, host.long_wait

    def wait_any(_store: Any, timeout_ms: int | None) -> Any:
        ev = current()
        flight: InFlight | None = ev.in_flight
        if flight is None or not flight.futures:
            return "invalid: the event has no request in flight"
        futures = flight.futures
        end = ev.bound
        if timeout_ms is not None:
            end = min(end, time.monotonic() + timeout_ms / 1000)
        if not any(f.done() for f in futures.values()):
            with long_wait():
                concurrent.futures.wait(list(futures.values()),
                                        timeout=max(0.0, end - time.monotonic()),
                                        return_when=concurrent.futures.FIRST_COMPLETED)
        for h, f in futures.items():  # in the order they started
            if f.done():
                del futures[h]
                return (h, f.result())
        return None
    return wait_any
