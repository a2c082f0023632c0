"""A guest that answers whatever status and headers it is told to: what a hostile or
careless guest may send back, for tests/e2e/test_front_door_hardening.py.

It bypasses the SDK's own checks on a Response (`export` refuses a status outside
100..599), so the host's checks are the only ones in the way.

  ANY /answer?status=N        answers status N (default 200), body "answer N\\n", and
                              the request body, a JSON list of [name, value] pairs, as its
                              headers (sent as given: any name, any value). The body may
                              instead be {"headers": [...], "again": {"status", "headers"}}:
                              a request delivered again after a hold (it carries
                              wk-hold-state) gets the "again" status and headers
  ANY /many?n=N&kb=K          200 with N headers x-many-I, each K KiB of "v"
  ANY /<anything else>        200 "ok\\n"
"""

from __future__ import annotations

import json
from typing import Any

from wkguest import _bindings as _b
from wkguest import actor as _actor  # noqa: F401  (imports every interface module)
from wkguest.codec import from_wire, to_wire


def _arg(query: str, name: str, default: int) -> int:
    for pair in query.split("&"):
        key, _, value = pair.partition("=")
        if key == name and value:
            return int(value)
    return default


def _answer(req: Any) -> tuple[int, list[tuple[str, str]], bytes]:
    if req.path == "/answer":
        status = _arg(req.query, "status", 200)
        body = from_wire(req.body)
        asked = json.loads(body) if body else []
        if isinstance(asked, dict):
            again = any(k == "wk-hold-state" for k, _ in req.headers)
            if again:
                status = int(asked["again"]["status"])
            asked = asked["again"]["headers"] if again else asked["headers"]
        headers = [(str(k), str(v)) for k, v in asked]
        return status, headers, f"answer {status}\n".encode()
    if req.path == "/many":
        value = "v" * (1024 * _arg(req.query, "kb", 1))
        return 200, [(f"x-many-{i}", value) for i in range(_arg(req.query, "n", 1))], b"ok\n"
    return 200, [("content-type", "text/plain")], b"ok\n"


class Handler:
    def on_init(self) -> None:
        pass

    def on_alarm(self) -> None:
        pass

    def handle(self, req: Any, sender: Any) -> Any:
        status, headers, body = _answer(req)
        return _b.types.Response(status=status, headers=headers, body=to_wire(body))
