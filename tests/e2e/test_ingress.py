"""A public ingress on a real `wkhost serve --tokens-file` (net/tokens.py's
`ingress:CLASS`): its token starts instances of its class and asks their status, in
JSON as a web app would, and nothing else: not another route, not another class, not
the listings, the metrics, the audit log or the console; its starts are audited under
its name."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from .server import Server

WEB = "web-app-token-0123456789"


@pytest.fixture
def server(build_guest: Callable[[str], Path], tmp_path: Path) -> Iterator[Server]:
    tokens = tmp_path / "tokens"
    tokens.write_text(f"web ingress:carts {WEB}\n")
    cart = build_guest("examples/workflows/cart/app.py")
    s = Server(tmp_path / "data", {"carts": cart, "other": cart},
               ["--tokens-file", str(tokens), "--access", "carts=internal",
                "--access", "other=internal"]).start()
    try:
        yield s
    finally:
        s.stop()


def as_web(s: Server, method: str, path: str, msg: object | None = None
           ) -> tuple[int, bytes]:
    body = None if msg is None else json.dumps(msg).encode()
    st, _, out = s.request(method, path, body, {"Authorization": f"Bearer {WEB}",
                                               "Content-Type": "application/json"})
    return st, out


def test_the_ingress_token_starts_and_reads_its_class_and_nothing_else(
        server: Server) -> None:
    st, out = as_web(server, "POST", "/carts/c-1/wk-workflow/v1/start",
                     {"input": None, "wait_ms": 5000})
    assert st == 200 and json.loads(out)["created"] is True, out
    st, out = as_web(server, "POST", "/carts/c-1/wk-workflow/v1/status", {})
    assert st == 200 and json.loads(out)["state"] == "waiting", out
    st, out = as_web(server, "GET", "/carts/c-1/wk-workflow/v1/status")
    assert st == 200, out
    refused = [("POST", "/carts/c-1/wk-workflow/v1/update", {"name": "add", "arg": "x"}),
               ("POST", "/carts/c-1/wk-workflow/v1/event", {"name": "checkout"}),
               ("POST", "/carts/c-1/wk-workflow/v1/cancel", {}),
               ("POST", "/carts/c-1/wk-workflow/v1/query", {"name": "items"}),
               ("GET", "/carts/c-1/wk-workflow/v1/steps", None),
               ("POST", "/other/o-1/wk-workflow/v1/start", {"input": None}),
               ("GET", "/_wk/actors/carts", None), ("GET", "/_wk/audit", None),
               ("GET", "/_wk/metrics", None), ("POST", "/carts/c-1/anything", {})]
    for method, path, msg in refused:
        st, out = as_web(server, method, path, msg)
        assert st == 403 and b"ingress" in out, (method, path, st, out)
    st, _, out = server.request("GET", "/_wk/audit?target=carts/c-1", operator=True)
    rows = json.loads(out)["entries"]
    assert any(r["who"] == "web" and r["action"] == "start" for r in rows), rows
