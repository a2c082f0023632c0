"""Fetches and actor calls in flight together (WIT interface `overlap`).

    async def prices() -> list[HttpResponse]:
        return await overlap.gather(*(overlap.fetch(u) for u in urls))

    answers = overlap.run(prices())          # from plain code: about the slowest, not the sum

Coroutines (`async def`) await `fetch` and `call`, which are `http.fetch` and
`actors.call` made without blocking: while one waits for its answer the others run on,
and the host holds every request in flight at once and wakes the guest at the first
answer. `run` drives coroutines from plain code; a workflow's group drives the
coroutines of its `async` step branches the same way (wkguest.workflow).

Only what this module gives may be awaited: asyncio cannot run in a component (its event
loop needs sockets WASI does not give), so `asyncio.sleep` or an asyncio future fails the
coroutine with a TypeError that says so. Guest code between two awaits runs alone, as any
guest code does: overlap is of the waits, not of the CPU.
"""

from __future__ import annotations

from collections.abc import Awaitable, Coroutine, Sequence
from typing import Any

from wkguest import _bindings as _b
from wkguest import idempotency, readonly
from wkguest.codec import to_wire
from wkguest.overlap_loop import Gather, Loop, Request, Task
from wkguest.types import HttpResponse, Response

__all__ = ["Task", "call", "fetch", "gather", "run"]


def fetch(url: str, method: str = "GET", headers: Sequence[tuple[str, str]] = (),
          body: bytes | bytearray | memoryview | str = b"",
          timeout_ms: int | None = None) -> Awaitable[HttpResponse]:
    """`http.fetch`, awaited: the same arguments, answer and errors (FetchError), sent
    when a coroutine awaits it."""
    readonly.refuse("an HTTP fetch")
    if timeout_ms is not None and timeout_ms < 0:
        raise ValueError(f"timeout_ms must be >= 0, got {timeout_ms}")
    raw = body.encode("utf-8") if isinstance(body, str) else bytes(body)
    return Request(_Fetch(url, method, [(str(k), str(v)) for k, v in headers], raw,
                           timeout_ms))


def call(cls: str, id: str, method: str = "POST", path: str = "/",
         body: bytes | bytearray | memoryview | str = b"",
         headers: Sequence[tuple[str, str]] = (), query: str = "",
         timeout_ms: int | None = None) -> Awaitable[Response]:
    """`actors.call`, awaited: the same arguments, answer and errors (CallError), made
    when a coroutine awaits it, cut after `timeout_ms` if given. It runs beside this
    event: re-entry into an actor of this call chain is refused as `actors.call` refuses
    it, but a wait that closes a cycle across threads is cut by the deadline."""
    readonly.refuse("a call to another actor")
    if timeout_ms is not None and timeout_ms < 0:
        raise ValueError(f"timeout_ms must be >= 0, got {timeout_ms}")
    raw = body.encode("utf-8") if isinstance(body, str) else bytes(body)
    return Request(_Call(cls, id, _b.types.Request(
        method=method, path=path, query=query,
        headers=[(str(k), str(v)) for k, v in headers], body=to_wire(raw)), timeout_ms))


def gather(*aws: Awaitable[Any]) -> Awaitable[list[Any]]:
    """Await every one of `aws` (coroutines, or `fetch` and `call`) together: their
    values in the order given, once all have ended; if any raised, the first of them
    in that order is raised then."""
    return Gather(aws)


def run(*coros: Coroutine[Any, Any, Any]) -> list[Any]:
    """Run `coros` together to their ends: their values in order, or the first one's
    exception, in that order, once all have ended. Inside a step, their fetches are keyed
    as a gather's are (wkguest/idempotency.py)."""
    keys = idempotency.current  # inside a step: each coroutine counts apart, as gather's
    forks = keys.fork(len(coros)) if keys is not None else [None] * len(coros)
    tasks = [Task(c, keys=k) for c, k in zip(coros, forks, strict=True)]
    Loop(tasks).run()
    for t in tasks:
        if t.error is not None:
            raise t.error
    return [t.value for t in tasks]


# -- the requests ---------------------------------------------------------------------

class _Fetch:
    __slots__ = ("url", "method", "headers", "body", "timeout_ms")
    fetches = True

    def __init__(self, url: str, method: str, headers: list[tuple[str, str]], body: bytes,
                 timeout_ms: int | None) -> None:
        self.url, self.method, self.headers = url, method, headers
        self.body, self.timeout_ms = body, timeout_ms

    def start(self, within_ms: int | None) -> int:
        timeout = _sooner(self.timeout_ms, within_ms)
        req = _b.http.HttpRequest(
            method=self.method, url=self.url,
            headers=list(idempotency.keyed(self.method, self.headers)),
            body=to_wire(self.body),
            timeout_ms=None if timeout is None else min(timeout, 2**32 - 1))
        return int(_b.overlap.start_fetch(req))


class _Call:
    __slots__ = ("cls", "id", "req", "timeout_ms")
    fetches = False

    def __init__(self, cls: str, id: str, req: Any, timeout_ms: int | None) -> None:
        self.cls, self.id, self.req, self.timeout_ms = cls, id, req, timeout_ms

    def start(self, within_ms: int | None) -> int:
        timeout = _sooner(self.timeout_ms, within_ms)
        target = _b.types.ActorRef(class_=self.cls, id=self.id)
        return int(_b.overlap.start_call(
            target, self.req, None if timeout is None else min(timeout, 2**32 - 1)))


def _sooner(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else min(a, b)
