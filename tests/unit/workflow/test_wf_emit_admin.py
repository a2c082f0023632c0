"""WorkflowAdmin.events and WorkflowAdmin.query (host/cli/client.py) over the stand-in
front door of test_wf_admin_client: the stream read page by page from an offset, and a
query's answer and its refusals."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import HTTPServer
from typing import Any

import pytest
from wkguest.workflow import Config, Run, WorkflowError
from wkguest.workflow.testing import FakeHost
from wkhost.cli.client import WorkflowAdmin

from .test_wf_admin_client import TOKEN, FrontDoor

N = 1234  # more than two pages of the events route (500 a page)


def ticker(run: Run, inp: Any) -> Any:
    seen = {"n": 0}
    run.query("seen", lambda arg: seen["n"] + (arg or 0))
    for i in range(N):
        run.emit("tick", {"i": i})
        seen["n"] += 1
    return run.wait_for_event("stop", 10_000)


@pytest.fixture
def admin(host: FakeHost) -> Iterator[WorkflowAdmin]:
    host.serve("tick", ticker, Config())
    handler = type("H", (FrontDoor,), {"host": host, "seen": []})
    server = HTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        a = WorkflowAdmin(f"http://127.0.0.1:{server.server_port}/", TOKEN)
        a.start("tick", "t1")
        host.run_due()
        yield a
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_events_come_page_by_page_from_an_offset(admin: WorkflowAdmin) -> None:
    every = admin.events("tick", "t1")
    assert [e.offset for e in every] == list(range(N))
    assert [e.payload["i"] for e in every] == list(range(N))
    assert [e.offset for e in admin.events("tick", "t1", after=N - 3)] == [N - 3, N - 2, N - 1]
    assert [e.offset for e in admin.events("tick", "t1", after=499, limit=3)] == [499, 500, 501]
    assert admin.events("tick", "t1", after=N) == []


def test_a_query_through_the_front_door(admin: WorkflowAdmin) -> None:
    assert admin.query("tick", "t1", "seen") == N
    assert admin.query("tick", "t1", "seen", 10) == N + 10
    with pytest.raises(WorkflowError) as e:
        admin.query("tick", "t1", "missing")
    assert e.value.kind == "no-query" and "(it registers: seen)" in e.value.message
    with pytest.raises(WorkflowError) as e:
        admin.query("tick", "nobody", "seen")
    assert e.value.kind == "unknown"
