"""Helpers for the in-process host tests: a Host plus shortcuts to the probe's routes.

Compiled components go to one shared cache (<repo>/.cache/compiled), so only the first
host of a run compiles (seconds); the others load the artifact (milliseconds).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from wkhost.core.host import Host
from wkhost.testing import FakeClock
from wkhost.types import Request, Response, Sender

REPO = Path(__file__).resolve().parents[2]
COMPILED = REPO / ".cache" / "compiled"
START_MS = 1_800_000_000_000


class Probe:
    """A Host plus shortcuts to call the probe guest's routes."""

    def __init__(self, host: Host, clock: FakeClock) -> None:
        self.host = host
        self.clock = clock

    def send(self, actor_id: str, method: str, path: str, body: bytes | str = b"",
             query: str = "", cls: str = "probe", sender: Sender | None = None) -> Response:
        ref = self.host.actor_ref(cls, actor_id)
        data = body.encode() if isinstance(body, str) else body
        return self.host.request(ref, Request(method, path, query, [], data),
                                 sender or Sender.operator())

    def json(self, actor_id: str, method: str, path: str, payload: Any = None,
             query: str = "", **kw: Any) -> Any:
        body = b"" if payload is None else json.dumps(payload).encode()
        resp = self.send(actor_id, method, path, body, query, **kw)
        assert resp.status == 200, (resp.status, resp.body[:300])
        return json.loads(resp.body)

    def sql(self, actor_id: str, sql: str, params: list[Any] | None = None,
            durable: bool = False) -> Any:
        return self.json(actor_id, "POST", "/sql",
                         {"sql": sql, "params": params or [], "durable": durable})


MakeProbe = Callable[..., Probe]
def wait_until(cond: Callable[[], bool], timeout: float = 10.0) -> bool:
    import time

    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.01)
    return False
