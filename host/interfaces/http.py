"""The `http` interface: the guest's outgoing fetch, done by host/fetch/ on its thread."""

from __future__ import annotations

from typing import Any

from ..fetch import FetchError, FetchRequest, fetch
from .ports import E, Fetches
from .records import record


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
            return "invalid: the body is not bytes-as-Latin-1 (use wkguest's http.fetch)"
        try:
            with long_wait():
                resp = fetch(request, policy, deadline=ev.bound)
        except FetchError as e:
            if e.kind == "timeout" and ev.cut_by_limit():
                return f"{e}, at the deadline the event set itself (lifecycle.narrow-deadline)"
            return str(e)
        return record(status=resp.status, headers=resp.headers,
                      body=resp.body.decode("latin-1"))

    with root.add_instance("wk:host/http@0.1.0") as iface:
        iface.add_func("fetch", guard(fetch_for_guest))
