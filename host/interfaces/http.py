"""The `http` interface: the guest's outgoing fetch, done by host/fetch/ on its thread.

A failed fetch answers "KIND: message" (fetch/errors.py), and keeps its WIT
`fetch-error-kind` for `last-error`: the fetch's own kind, but for a timeout that the
deadline the event set itself cut (`narrowed-deadline`), told by the event, not by the
text.
"""

from __future__ import annotations

from typing import Any

from .. import tracing
from ..fetch import FetchError, FetchRequest, fetch
from ..fetch.via import fetch_via
from .ports import E, Fetches, RunningEvent
from .records import record

NARROWED_DEADLINE = "narrowed-deadline"


def _failed(ev: RunningEvent, kind: str, message: str) -> str:
    """Note `ev`'s failed fetch for `last-error`, and give its message back."""
    ev.fetch_error = (kind, message)
    tracing.failed(message)  # its CLIENT span's status, if traced
    return message


def register(root: Any, guard: Any, host: Fetches[E]) -> None:
    policy, current, long_wait = host.fetch_policy, host.current_event, host.long_wait

    def fetch_for_guest(_store: Any, req: Any) -> Any:
        ev = current()
        try:
            request = FetchRequest(
                method=req.method,
                url=req.url,
                headers=list(req.headers),
                body=req.body.encode("latin-1"),
                timeout_ms=getattr(req, "timeout-ms"),
            )
        except UnicodeEncodeError:
            return _failed(
                ev, "invalid",
                "invalid: the body is not bytes-as-Latin-1 (use wkguest's http.fetch)")
        try:
            with long_wait():
                resp = fetch(request, policy, deadline=ev.bound) if policy.via is None \
                    else fetch_via(request, policy, policy.via, ev.bound)
        except FetchError as e:
            if e.kind == "timeout" and ev.cut_by_limit():
                why = f"{e}, at the deadline the event set itself (lifecycle.narrow-deadline)"
                return _failed(ev, NARROWED_DEADLINE, why)
            return _failed(ev, e.kind, str(e))
        return record(status=resp.status, headers=resp.headers,
                      body=resp.body.decode("latin-1"))

    def last_error(_store: Any) -> Any:
        got = current().fetch_error
        return None if got is None else record(kind=got[0], message=got[1])

    with root.add_instance("wk:host/http@0.1.0") as iface:
        iface.add_func("fetch", guard(fetch_for_guest))
        iface.add_func("last-error", guard(last_error))
