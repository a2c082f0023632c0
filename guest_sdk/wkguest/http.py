"""Outgoing HTTP, performed by the host (WIT interface `http`).

    r = http.fetch("https://api.example.com/v1/x", headers=[("accept", "application/json")])
    data = r.json()

Every status is a response (check `r.status`); only the transport failing is an error.
The host enforces an allow-list, a body size cap and the event's deadline.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from wkguest import _bindings as _b
from wkguest import idempotency, readonly
from wkguest.codec import from_wire, to_wire
from wkguest.errors import FetchError, FetchKind
from wkguest.types import HttpResponse

__all__ = ["HttpResponse", "fetch"]


def fetch(
    url: str,
    method: str = "GET",
    headers: Sequence[tuple[str, str]] = (),
    body: bytes | bytearray | memoryview | str = b"",
    timeout_ms: int | None = None,
) -> HttpResponse:
    """Fetch an absolute http(s) `url` (redirects followed, each one allow-listed).

    `body` may be str (sent as UTF-8). `timeout_ms` is capped by the event's time left.
    Raises FetchError with `.kind` one of: "denied" (not allowed), "timeout" (its own
    timeout or the event's deadline), "narrowed-deadline" (cut at the deadline the event
    set itself, `lifecycle.narrow_deadline`), "too-large" (body over the host's cap),
    "incomplete" (body cut short), "connect", "invalid" (malformed request);
    ValueError for a negative `timeout_ms`; ReadOnlyError while code that may only read
    runs (`wkguest.readonly`), before anything is sent.

    Inside a workflow's step, a POST, PUT, PATCH or DELETE carries an Idempotency-Key
    that is the same in every attempt (wkguest/idempotency.py).
    """
    readonly.refuse("an HTTP fetch")
    if timeout_ms is not None and timeout_ms < 0:
        raise ValueError(f"timeout_ms must be >= 0, got {timeout_ms}")
    raw = body.encode("utf-8") if isinstance(body, str) else body
    req = _b.http.HttpRequest(
        method=method,
        url=url,
        headers=list(idempotency.keyed(method, [(str(k), str(v)) for k, v in headers])),
        body=to_wire(raw),
        timeout_ms=None if timeout_ms is None else min(int(timeout_ms), 2**32 - 1),
    )
    try:
        r = _b.http.fetch(req)
    except _b.Err as e:
        raise _error(e) from None
    return HttpResponse(int(r.status), list(r.headers), from_wire(r.body))


def _error(e: Any) -> FetchError:
    """The FetchError for the host's `result` error `e`, of the kind the host gives
    beside it (WIT `http.last-error`): read only when a fetch failed."""
    info = _b.http.last_error()
    kind = None if info is None else info.kind.name.lower().replace("_", "-")
    return FetchError.from_reason(str(e.value), cast(FetchKind | None, kind))
