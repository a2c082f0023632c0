"""Held answers (`wk-hold-ms`) through a real `wkhost serve`: a request that waits for its
actor's next event, then is delivered again (host/events/holds.py, docs/concepts.md)."""

from __future__ import annotations

import json
import signal
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from .conftest import MakeServer
from .server import Server

TIMEOUT = 30.0


class Pending:
    """A request running on a thread of its own, for a test to let go of meanwhile."""

    def __init__(self, server: Server, path: str, operator: bool = False) -> None:
        self.result: tuple[int, dict[str, str], bytes] | None = None
        self.elapsed = 0.0

        def run() -> None:
            t0 = time.monotonic()
            self.result = server.request("POST", path, b"", operator=operator,
                                         timeout=TIMEOUT * 2)
            self.elapsed = time.monotonic() - t0

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()

    def answer(self) -> tuple[int, dict[str, str], dict[str, Any]]:
        self.thread.join(TIMEOUT * 2)
        assert self.result is not None, "the held request never came back"
        status, headers, body = self.result
        return status, headers, json.loads(body)


def held(server: Server) -> int:
    status, _, data = server.request("GET", "/_wk/health")
    assert status == 200
    return int(json.loads(data)["requests_held"])


def until(cond: Callable[[], bool], what: str) -> None:
    end = time.monotonic() + TIMEOUT
    while not cond():
        assert time.monotonic() < end, f"timed out waiting until {what}"
        time.sleep(0.01)


def no_hold_headers(headers: dict[str, str]) -> bool:
    return not any(k.lower().startswith("wk-hold") for k in headers)


def test_a_held_answer_comes_again_after_the_actors_next_event(server: Server) -> None:
    now = server.advance(0)
    assert server.actor("probe", "h1", "POST", "/alarm/set", query=f"at={now + 60_000}")[0] == 200
    pending = Pending(server, "/probe/h1/hold?ms=30000&state=s1")
    until(lambda: held(server) == 1, "the answer is held")
    server.advance(60_000)  # the alarm's event ends, and the request is delivered again
    status, headers, body = pending.answer()
    assert status == 200
    assert body == {"alarms": 1, "hold_state": "s1", "sender": "public"}
    assert no_hold_headers(headers)
    assert held(server) == 0


def test_every_other_event_of_the_actor_delivers_it_again(server: Server) -> None:
    pending = Pending(server, "/probe/h2/hold?ms=30000&state=x")
    until(lambda: held(server) == 1, "the answer is held")
    for _ in range(3):
        # Another request to the actor: the held one is delivered again, and held again
        # (no alarm yet), without any client asking.
        server.actor("probe", "h2", "GET", "/now")
        until(lambda: held(server) == 1, "it is held again")
    assert pending.result is None
    assert server.actor("probe", "h2", "POST", "/alarm/set", query="at=0")[0] == 200
    status, _, body = pending.answer()
    assert status == 200 and body["alarms"] == 1 and body["hold_state"] == "x"
    # The first delivery, and one after each /now; then, after /alarm/set, one that is
    # held again and one after the alarm's event, or (should that event take the
    # actor's lock first) a single one.
    assert deliveries(server, "h2") in (5, 6)


def deliveries(server: Server, actor_id: str) -> int:
    status, body = server.actor("probe", actor_id, "GET", "/log")
    assert status == 200
    return sum(1 for kind, _ in body["rows"] if kind == "hold")


def test_a_request_whose_client_hung_up_is_not_delivered_again(server: Server) -> None:
    host, port = server.url.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=TIMEOUT) as sock:
        sock.sendall(b"POST /probe/h8/hold?ms=30000 HTTP/1.1\r\nHost: x\r\n"
                     b"Content-Length: 0\r\n\r\n")
        until(lambda: held(server) == 1, "the answer is held")
    server.actor("probe", "h8", "GET", "/now")  # an event: it would deliver it again
    until(lambda: held(server) == 0, "the hold is let go")
    assert deliveries(server, "h8") == 1


def test_a_held_answer_goes_when_its_time_is_up(server: Server) -> None:
    pending = Pending(server, "/probe/h3/hold?ms=400")
    status, headers, body = pending.answer()
    assert status == 200 and body == {"alarms": 0, "hold_state": None, "sender": "public"}
    assert pending.elapsed >= 0.35  # it waited for its time, then got the held answer
    assert no_hold_headers(headers)
    assert held(server) == 0  # nothing is kept for an actor that has no further event


def test_a_hold_that_is_not_a_whole_number_of_ms_is_ignored(server: Server) -> None:
    for ms in ("abc", "-30000", "0", "3e4", "30000.5", "%EF%BC%93"):  # the last: U+FF13
        t0 = time.monotonic()
        status, headers, data = server.request("POST", f"/probe/h4/hold?ms={ms}", b"",
                                               timeout=20)
        assert status == 200 and json.loads(data)["alarms"] == 0, ms
        assert time.monotonic() - t0 < 20 and no_hold_headers(headers), ms
    assert held(server) == 0


def test_a_client_cannot_send_the_hosts_hold_headers(server: Server) -> None:
    forged = {"wk-hold-state": "created", "WK-Hold-Ms": "5"}
    status, body = server.actor("probe", "h5", "GET", "/whoami", operator=False, headers=forged)
    assert status == 200
    assert not any(k.startswith("wk-hold") for k, _ in body["headers"]), body["headers"]


def test_a_call_from_an_actor_is_answered_at_once(server: Server) -> None:
    call = {"cls": "probe", "id": "h6", "method": "POST", "path": "/hold",
            "query": "ms=30000&state=s"}
    status, body = server.actor("probe", "caller", "POST", "/call", call, operator=False)
    assert status == 200 and body["status"] == 200
    assert json.loads(body["body"])["alarms"] == 0
    # The caller sees the callee's headers as they were set: no front door held them.
    assert ["wk-hold-ms", "30000"] in body["headers"]
    assert held(server) == 0


def test_stopping_the_host_answers_the_held_requests(make_server: MakeServer) -> None:
    s = make_server()
    pendings = [Pending(s, f"/probe/h7-{i}/hold?ms=100000") for i in range(3)]
    until(lambda: held(s) == 3, "the answers are held")
    assert s.stop(signal.SIGTERM) == 0
    for p in pendings:
        status, _, body = p.answer()
        assert status == 200 and body["alarms"] == 0
        assert p.elapsed < 60  # the held answer, at the stop: not its 100 s
    assert any("stopped cleanly" in line for line in s.log)
