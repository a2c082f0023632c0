"""host/cli/client.py against a tiny stand-in for the front door (stdlib HTTP server
on 127.0.0.1, the FakeHost behind it): paths, quoting, the token, answers, errors."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import pytest
from wkguest.workflow import Config, Run, WorkflowError
from wkguest.workflow.testing import FakeHost
from wkhost.cli.client import WorkflowAdmin

TOKEN = "s3cret"


def order(run: Run, inp: Any) -> Any:
    run.step("reserve", lambda: inp)
    for i in range(3):
        run.step("line", lambda i=i: i)
    got = run.wait_for_event("approved", 10_000)
    return {"input": inp, "approved": got}


class FrontDoor(BaseHTTPRequestHandler):
    host: FakeHost
    seen: list[tuple[str, str, str]]

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def _serve(self) -> None:
        parts = urlsplit(self.path)
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        operator = self.headers.get("Authorization") == f"Bearer {TOKEN}"
        segs = parts.path.split("/")
        if parts.path.startswith("/_wk/actors/"):
            return self._list(unquote(segs[3]), parse_qs(parts.query), operator)
        if len(segs) < 3 or segs[1] not in self.host.classes:
            return self._answer(404, b"no such class\n")
        cls, id, rest = unquote(segs[1]), unquote(segs[2]), "/" + "/".join(segs[3:])
        self.seen.append((cls, id, rest))
        if id == "trap":
            return self._answer(500, b"the instance trapped: boom\n")
        status, out = self.host.call(cls, id, self.command, unquote(rest), body,
                                     "operator" if operator else "public")
        self._answer(status, out)

    def _list(self, cls: str, query: dict[str, list[str]], operator: bool) -> None:
        """The host's listing (host/net/listing.py), from what each instance published."""
        if not operator:
            return self._answer(403, b"listing actors is for operators\n")
        after, limit = query.get("after", [""])[0], int(query.get("limit", ["1000"])[0])
        statuses = {s for v in query.get("status", []) for s in v.split(",")}
        actors = []
        for (c, i), inst in sorted(self.host.instances.items()):
            status, updated_ms, labels = inst.backend.published or (None, 0, {})
            if c == cls and i > after and (not statuses or status in statuses):
                actors.append({"id": i, "status": status, "updated_ms": updated_ms,
                               "labels": labels})
        actors = actors[:limit]
        full = len(actors) == limit
        self._answer(200, json.dumps({"ids": [a["id"] for a in actors], "actors": actors,
                                      "next": actors[-1]["id"] if full else None}).encode())

    def _answer(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def served(host: FakeHost) -> Iterator[tuple[WorkflowAdmin, FakeHost, list[Any]]]:
    host.serve("orders", order, Config(retention_ms=1000))
    seen: list[Any] = []
    handler = type("H", (FrontDoor,), {"host": host, "seen": seen})
    server = HTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield WorkflowAdmin(f"http://127.0.0.1:{server.server_port}/", TOKEN), host, seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_start_follow_and_finish(served: Any) -> None:
    admin, host, seen = served
    s = admin.start("orders", "a/b c?", {"item": b"book"})
    assert s.state == "running"
    assert seen[-1] == ("orders", "a/b c?", "/wk-workflow/v1/start")  # the id travels quoted
    host.run_due()
    s = admin.status("orders", "a/b c?")
    assert (s.state, s.waiting_for, s.positions) == ("waiting", ("approved",), 5)
    admin.send_event("orders", "a/b c?", "approved", {"by": "ann"})
    host.run_due()
    assert admin.status("orders", "a/b c?").output == {"input": {"item": b"book"},
                                                       "approved": {"by": "ann"}}
    with pytest.raises(WorkflowError) as e:
        admin.send_event("orders", "a/b c?", "approved")
    assert e.value.kind == "finished"


def test_steps_listing_and_summary(served: Any) -> None:
    admin, host, _ = served
    admin.start("orders", "o1", 1)
    admin.start("orders", "o2", 2)
    host.run_due()
    steps = admin.steps("orders", "o1")
    assert [(s["pos"], s["name"], s["state"]) for s in steps] == [
        (0, "reserve", "done"), (1, "line", "done"), (2, "line", "done"), (3, "line", "done"),
        (4, "approved", "waiting")]
    assert steps[4]["wake_at"] == host.clock.now() + 10_000
    assert len(admin.steps("orders", "o1", start=1, limit=2)) == 2
    assert "output" not in admin.summary("orders", "o1")
    admin.cancel("orders", "o2")
    assert admin.ids("orders") == ["o1", "o2"]
    assert [i for i, _ in admin.list("orders", state="waiting")] == ["o1"]
    assert [(i, s["state"]) for i, s in admin.list("orders")] == [
        ("o1", "waiting"), ("o2", "cancelled")]


def test_errors(served: Any) -> None:
    admin, host, _ = served
    with pytest.raises(WorkflowError) as e:
        admin.status("orders", "ghost")
    assert (e.value.kind, e.value.status) == ("unknown", 404)
    assert host.instances == {}
    with pytest.raises(WorkflowError) as e:
        admin.status("orders", "trap")
    assert (e.value.kind, e.value.status) == ("call", 500)
    assert "trapped" in e.value.message
    with pytest.raises(WorkflowError) as e:
        admin.status("nope", "x")
    assert (e.value.kind, e.value.status, e.value.message) == ("refused", 404, "no such class")
    public = WorkflowAdmin(admin.base_url, "wrong")
    admin.start("orders", "o1")
    with pytest.raises(WorkflowError) as e:
        public.status("orders", "o1")
    assert (e.value.kind, e.value.status) == ("refused", 403)
    with pytest.raises(WorkflowError) as e:
        public.ids("orders")
    assert e.value.status == 403


def test_connection_failure_is_a_call_error() -> None:
    admin = WorkflowAdmin("http://127.0.0.1:9", TOKEN, timeout=2)
    with pytest.raises(WorkflowError) as e:
        admin.status("orders", "o1")
    assert e.value.kind == "call"
