"""A guest whose SQL, actor calls and fetches fail in each way the host tells apart by a
kind (WIT `sqlite.last-error`, `actors.last-error`, `http.last-error`), and that answers
what the SDK raised.

    POST /sql    {"sql": S, "read_only": bool?, "narrow": ms?}   runs S with sqlite.exec,
                 inside wkguest.readonly.read_only("test") if read_only, after
                 lifecycle.narrow_deadline(ms) if narrow
    POST /call   {"cls": C, "id": I, "path": P?, "protocol": NAME?, "narrow": ms?}
                 actors.call(C, I, "POST", P), with the header wk-protocol: NAME if given
    POST /fetch  {"url": U, "timeout_ms": ms?, "narrow": ms?}   http.fetch(U), after
                 lifecycle.narrow_deadline(ms) if narrow; {"ok": the status} if it answers
    POST /raise  raises RuntimeError, uncaught (a callee that traps)
    POST /spin   loops, calling the WASI clock, until a deadline cuts it
    Each of /sql, /call and /fetch answers {"ok": ...} or {"type": the exception's class,
    "kind": its `.kind` (null if it has none), "error": str(e)}.
"""

from __future__ import annotations

import time
from typing import Any

from wkguest import Actor, Request, Response, actors, export, http, lifecycle, readonly, sqlite
from wkguest.errors import WkError


def _sql(doc: dict[str, Any]) -> Any:
    if doc.get("narrow") is not None:
        lifecycle.narrow_deadline(doc["narrow"])
    if doc.get("read_only"):
        with readonly.read_only("test"):
            return sqlite.exec(doc["sql"]).rows
    return sqlite.exec(doc["sql"]).rows


def _call(doc: dict[str, Any]) -> Any:
    if doc.get("narrow") is not None:
        lifecycle.narrow_deadline(doc["narrow"])
    headers = [("wk-protocol", doc["protocol"])] if doc.get("protocol") else []
    r = actors.call(doc["cls"], doc["id"], "POST", doc.get("path", "/"), b"", headers)
    return r.status


def _fetch(doc: dict[str, Any]) -> Any:
    if doc.get("narrow") is not None:
        lifecycle.narrow_deadline(doc["narrow"])
    return http.fetch(doc["url"], timeout_ms=doc.get("timeout_ms")).status


def _spin() -> None:
    while True:  # each turn calls the clock: a narrowed deadline traps at a call
        time.monotonic()


class ErrorKinds(Actor):
    def handle(self, req: Request) -> Response:
        if req.path == "/raise":
            raise RuntimeError("error_kinds: raised on purpose")
        if req.path == "/spin":
            _spin()
        run = {"/sql": _sql, "/call": _call, "/fetch": _fetch}.get(req.path)
        if run is None:
            return Response.json({"error": f"no route {req.path}"}, status=404)
        try:
            return Response.json({"ok": run(req.json())})
        except WkError as e:
            return Response.json({"type": type(e).__name__, "kind": getattr(e, "kind", None),
                                  "error": str(e)})


Handler = export(ErrorKinds)
