"""Actor-to-actor calls through a real server: identity, refusals, traps, deadlines."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator

import pytest

from .local_http import local_http
from .server import Server


def chain(server: Server, start: str, hops: list[tuple[str, str]]) -> dict:  # type: ignore[type-arg]
    status, body = server.actor("probe", start, "POST", "/chain",
                                {"hops": [list(h) for h in hops]})
    assert status == 200, body
    return body  # type: ignore[no-any-return]


def test_a_chain_reaches_its_end_and_the_callee_sees_its_caller(server: Server) -> None:
    assert chain(server, "a", [("probe", "b"), ("inner", "c")])["self"] == ["inner", "c"]


def test_a_to_b_to_a_is_refused_as_reentry(server: Server) -> None:
    body = chain(server, "a", [("probe", "b"), ("probe", "a")])
    assert "re-entrant" in body["error"] and body["at"] == ["probe", "b"]


def test_a_deep_chain_is_refused_without_a_crash(server: Server) -> None:
    hops = [("probe", f"n{i}") for i in range(60)]
    body = chain(server, "start", hops)
    assert "deep" in body["error"]
    assert server.proc is not None and server.proc.poll() is None
    assert server.actor("probe", "start", "GET", "/now")[0] == 200


def test_a_callee_trap_is_an_error_for_the_caller(server: Server) -> None:
    status, body = server.actor("probe", "a", "POST", "/call",
                                {"cls": "probe", "id": "victim", "path": "/trap"})
    assert status == 200 and body["error"].startswith("callee-trapped:")
    # Both are served again afterwards.
    assert server.actor("probe", "victim", "GET", "/now")[0] == 200
    assert server.actor("probe", "a", "GET", "/now")[0] == 200


def test_a_call_to_an_unknown_class_is_an_error(server: Server) -> None:
    status, body = server.actor("probe", "a", "POST", "/call", {"cls": "nosuch", "id": "x"})
    assert body["error"].startswith("unknown:")


class _Slow(http.server.BaseHTTPRequestHandler):
    release = threading.Event()

    def do_GET(self) -> None:  # noqa: N802
        _Slow.release.wait(10)
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def slow_server() -> Iterator[str]:
    _Slow.release.clear()
    with local_http(_Slow) as port:
        yield f"127.0.0.1:{port}"
        _Slow.release.set()


def test_a_cycle_across_threads_is_refused_at_once(make_server, slow_server: str) -> None:  # type: ignore[no-untyped-def]
    s = make_server(extra=["--allow-http", slow_server])
    # x holds itself while it waits on the slow server, then calls y; meanwhile y holds
    # itself and calls x. Whoever closes the loop is refused at once, not at the deadline.
    url = f"http://{slow_server}/"
    results: dict[str, object] = {}

    def run(me: str, other: str) -> None:
        results[me] = s.actor("probe", me, "POST", "/wait-then-call",
                              {"url": url, "call": {"cls": "probe", "id": other,
                                                    "path": "/now"}})

    threads = [threading.Thread(target=run, args=p) for p in (("x", "y"), ("y", "x"))]
    for t in threads:
        t.start()
    threading.Timer(0.5, _Slow.release.set).start()
    for t in threads:
        t.join(30)
    outcomes = [json.dumps(results[k]) for k in ("x", "y")]
    assert sum("cycle" in o for o in outcomes) == 1, outcomes
    assert sum('"status": 200' in o for o in outcomes) == 1, outcomes
