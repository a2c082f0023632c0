"""Synchronous calls to other actors (WIT interface `actors`).

    r = actors.call("counter", "c1", "POST", "/incr")
    if r.status == 200: ...

The callee sees this actor as its sender. A call into an actor already in this call chain
is refused (no re-entry), and the call is bounded by the time this event has left.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from wkguest import _bindings as _b
from wkguest import readonly
from wkguest.codec import from_wire, to_wire
from wkguest.errors import CallError, CallErrorKind
from wkguest.types import Response

__all__ = ["call"]


def call(
    cls: str,
    id: str,
    method: str = "POST",
    path: str = "/",
    body: bytes | bytearray | memoryview | str = b"",
    headers: Sequence[tuple[str, str]] = (),
    query: str = "",
) -> Response:
    """Call actor `cls`/`id`'s `handle` and wait for its response (any status).

    `body` may be str (sent as UTF-8). `path` is the callee's path ("/" + ...), `query`
    the raw query string without "?".
    Raises CallError (unknown class; refused: re-entry, cycle, depth cap, backpressure;
    the callee trapped or ran out of budget; the deadline passed: its `kind` says
    which), ReadOnlyError (while
    code that may only read runs: `wkguest.readonly`).
    """
    readonly.refuse("a call to another actor")
    raw = body.encode("utf-8") if isinstance(body, str) else body
    target = _b.types.ActorRef(class_=cls, id=id)
    req = _b.types.Request(
        method=method,
        path=path,
        query=query,
        headers=[(str(k), str(v)) for k, v in headers],
        body=to_wire(raw),
    )
    try:
        r = _b.actors.call(target, req)
    except _b.Err as e:
        raise _error(e) from None
    return Response(int(r.status), list(r.headers), from_wire(r.body))


def _error(e: Any) -> CallError:
    """The CallError for the host's `result` error `e`, of the kind the host gives
    beside it (WIT `actors.last-error`): read only when a call failed."""
    info = _b.actors.last_error()
    kind = "other" if info is None else info.kind.name.lower().replace("_", "-")
    return CallError(str(e.value), cast(CallErrorKind, kind))
