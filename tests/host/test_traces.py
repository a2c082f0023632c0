"""OpenTelemetry traces from an in-process Host serving the probe, through the SDK's
in-memory exporter: a span per event with a child per host call, an actor call's callee
under the caller's call span, a trap's span marked, `traceparent` on a guest's fetch
only to a destination --trace-propagate names, a client's `traceparent` at the front
door as its event span's parent (a malformed one ignored), and a workflow's run id, step
position and status on its events' spans."""

from __future__ import annotations

import asyncio
import http.server
import json
import threading
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import cbor2
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from wkhost import tracing
from wkhost.config import HostConfig
from wkhost.core.host import Host
from wkhost.errors import BudgetExceeded, GuestFailed, HostError
from wkhost.fetch import FetchPolicy
from wkhost.net.frontdoor import make_app
from wkhost.storage.actordb import ActorDb
from wkhost.storage.workflow_place import workflow_place
from wkhost.testing import FakeClock

from .support import COMPILED, START_MS, MakeProbe, Probe, wait_until


class Recorder(http.server.BaseHTTPRequestHandler):
    """Answers 200 and keeps each request's headers (on its server's `seen`)."""

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        self.server.seen.append({k.lower(): v for k, v in self.headers.items()})  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *_: Any) -> None:
        pass


@pytest.fixture
def recorders() -> Iterator[list[Any]]:
    servers = []
    for _ in range(2):
        s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
        s.seen = []  # type: ignore[attr-defined]
        threading.Thread(target=s.serve_forever, daemon=True).start()
        servers.append(s)
    yield servers
    for s in servers:
        s.shutdown()
        s.server_close()


@pytest.fixture
def spans(recorders: list[Any]) -> Iterator[InMemorySpanExporter]:
    """Tracing on, into memory, before any host is made (its linker wraps then); the
    first recorder is the one destination the trace may be sent to."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    allowed = f"127.0.0.1:{recorders[0].server_port}"
    tracing.install(provider, HostConfig(trace_propagate=allowed).trace_targets())
    try:
        yield exporter
    finally:
        tracing.shutdown()


def one(spans: list[ReadableSpan], name: str, **attrs: Any) -> ReadableSpan:
    found = [s for s in spans if s.name == name
             and all((s.attributes or {}).get(k) == v for k, v in attrs.items())]
    assert len(found) == 1, (name, attrs, [s.name for s in spans])
    return found[0]


def children(spans: list[ReadableSpan], parent: ReadableSpan) -> list[ReadableSpan]:
    assert parent.context is not None
    return [s for s in spans if s.parent is not None
            and s.parent.span_id == parent.context.span_id]


def test_an_actor_call_is_one_tree(spans: InMemorySpanExporter,
                                   make_probe: MakeProbe) -> None:
    probe = make_probe()
    inner_sql = json.dumps({"sql": "SELECT 1", "params": []})
    out = probe.json("a", "POST", "/call", {"cls": "inner", "id": "b", "path": "/sql",
                                            "body": inner_sql})
    assert out["status"] == 200, out
    done = list(spans.get_finished_spans())
    caller = one(done, "request probe", **{"wkhost.actor_id": "a"})
    assert caller.parent is None
    assert caller.attributes is not None
    assert caller.attributes["wkhost.outcome"] == "ok"
    assert caller.attributes["wkhost.fuel"] > 0
    call = one(done, "actors.call")
    assert call in children(done, caller)
    callee = one(done, "request inner", **{"wkhost.actor_id": "b"})
    assert children(done, call) == [callee]
    assert {s.context.trace_id for s in (caller, call, callee)} == {caller.context.trace_id}
    assert any(s.name.startswith("sqlite.") for s in children(done, callee))


def test_a_trap_marks_its_event_span(spans: InMemorySpanExporter,
                                     make_probe: MakeProbe) -> None:
    probe = make_probe(cpu_budget_ms=100)
    with pytest.raises(GuestFailed, match="the guest raised RuntimeError: probe: trap requested"):
        probe.send("t", "POST", "/trap")
    with pytest.raises(BudgetExceeded, match="CPU budget"):
        probe.send("s", "POST", "/spin")
    done = list(spans.get_finished_spans())
    for actor, outcome in (("t", "trap"), ("s", "cpu_cut")):
        span = one(done, "request probe", **{"wkhost.actor_id": actor})
        assert span.attributes is not None and span.attributes["wkhost.outcome"] == outcome
        assert span.status.status_code == StatusCode.ERROR


def test_a_fetch_carries_the_trace_only_where_allowed(
        spans: InMemorySpanExporter, make_probe: MakeProbe, recorders: list[Any]) -> None:
    allowed, other = recorders
    policy = FetchPolicy.parse([f"127.0.0.1:{s.server_port}" for s in recorders])
    probe = make_probe(http=policy)
    for s in recorders:
        url = f"http://127.0.0.1:{s.server_port}/"
        out = probe.json("f", "POST", "/fetch", {
            "url": url, "headers": [["traceparent", "00-" + "1" * 32 + "-" + "2" * 16 + "-01"]]})
        assert out["status"] == 200, out
    done = list(spans.get_finished_spans())
    fetches = [s for s in done if s.name == "http.fetch"]
    assert len(fetches) == 2
    sent = allowed.seen[0]["traceparent"]
    first = fetches[0].context
    assert sent.startswith(f"00-{first.trace_id:032x}-{first.span_id:016x}-"), sent
    # Elsewhere the guest's own header goes as the guest wrote it, and no trace of ours.
    assert other.seen[0]["traceparent"] == "00-" + "1" * 32 + "-" + "2" * 16 + "-01"


def test_a_bad_trace_destination_is_refused_by_name(make_probe: MakeProbe) -> None:
    with pytest.raises(HostError, match="--trace-propagate: .*'no such:host:1'"):
        make_probe(trace_propagate="127.0.0.1:80,no such:host:1")


# -- a client's traceparent at the front door ------------------------------------------

TOKEN = "t" * 24
CLIENT_TRACE = "0af7651916cd43dd8448eb211c80319c"
CLIENT_SPAN = "b7ad6b7169203331"


def through_front_door(probe: Probe, path: str, headers: dict[str, str]) -> int:
    """GET `path` through the front door (net/frontdoor.py) on 127.0.0.1: its status."""
    async def go() -> int:
        async with TestClient(TestServer(make_app(probe.host, TOKEN))) as client:
            resp = await client.get(path, headers=headers)
            await resp.read()
            return resp.status

    with warnings.catch_warnings():  # the front door's keys are strings (as serve's)
        warnings.simplefilter("ignore", web.NotAppKeyWarning)
        return asyncio.run(go())


def test_a_clients_traceparent_is_its_event_spans_parent(
        spans: InMemorySpanExporter, make_probe: MakeProbe) -> None:
    probe = make_probe()
    status = through_front_door(probe, "/probe/c/now", {
        "traceparent": f"00-{CLIENT_TRACE}-{CLIENT_SPAN}-01", "tracestate": "vendor=x1"})
    assert status == 200
    span = one(list(spans.get_finished_spans()), "request probe", **{"wkhost.actor_id": "c"})
    assert span.context is not None and span.parent is not None
    assert span.context.trace_id == int(CLIENT_TRACE, 16)
    assert span.parent.span_id == int(CLIENT_SPAN, 16) and span.parent.is_remote
    assert span.context.trace_state.get("vendor") == "x1"
    assert not any(k.startswith("wkhost.workflow.") for k in span.attributes or {})


@pytest.mark.parametrize("traceparent", [
    "garbage",
    f"00-{'0' * 32}-{CLIENT_SPAN}-01",        # the all-zero trace id is invalid
    f"00-{CLIENT_TRACE}-{'0' * 16}-01",       # so is the all-zero span id
    f"00-{CLIENT_TRACE.upper()}-{CLIENT_SPAN}-01",  # upper-case hex
    f"00-{CLIENT_TRACE}-{CLIENT_SPAN}",       # no flags
])
def test_a_malformed_traceparent_is_ignored(spans: InMemorySpanExporter,
                                            make_probe: MakeProbe, traceparent: str) -> None:
    probe = make_probe()
    assert through_front_door(probe, "/probe/m/now", {"traceparent": traceparent,
                                                      "tracestate": "=,="}) == 200
    span = one(list(spans.get_finished_spans()), "request probe", **{"wkhost.actor_id": "m"})
    assert span.parent is None and span.context is not None
    assert span.context.trace_id != int(CLIENT_TRACE, 16)


def test_with_tracing_off_a_clients_trace_is_not_read() -> None:
    assert tracing.tracer is None
    assert tracing.from_client({"traceparent": f"00-{CLIENT_TRACE}-{CLIENT_SPAN}-01"}) == {}


# -- a workflow's run id, step and status ------------------------------------------------

@pytest.fixture
def packer(tmp_path: Path, build_guest: Callable[[str], Path],
           spans: InMemorySpanExporter) -> Iterator[Probe]:
    """A host serving tests/guests/wf_events.py as "packer", tracing on (`spans` first)."""
    wasm = build_guest("wf_events")
    clock = FakeClock(START_MS)
    host = Host(HostConfig(data_dir=tmp_path / "data", cache_dir=COMPILED), clock)
    try:
        host.add_class("packer", wasm)
        host.start()
        yield Probe(host, clock)
    finally:
        host.close(timeout_s=2)


def workflow(packer: Probe, route: str, doc: dict[str, Any] | None = None) -> Any:
    resp = packer.send("p1", "POST", f"/wk-workflow/v1/{route}", cbor2.dumps(doc or {}),
                       cls="packer")
    assert resp.status == 200, resp.body
    return cbor2.loads(resp.body)


def alarm_span(spans: InMemorySpanExporter, status: str) -> ReadableSpan:
    """The one event span of packer's alarm that ended with the instance `status`."""
    def ended() -> list[ReadableSpan]:
        return [s for s in spans.get_finished_spans() if s.name == "alarm packer"
                and (s.attributes or {}).get("wkhost.workflow.status") == status]

    assert wait_until(lambda: len(ended()) > 0), [s.name for s in spans.get_finished_spans()]
    (span,) = ended()
    return span


def test_a_workflows_events_carry_its_run_id_step_and_status(
        packer: Probe, spans: InMemorySpanExporter) -> None:
    started = workflow(packer, "start", {"input": {"items": ["a", "b"]}})
    run_id = started["run_id"]
    start = one(list(spans.get_finished_spans()), "request packer")
    assert start.attributes is not None
    assert start.attributes["wkhost.workflow.run_id"] == run_id
    assert start.attributes["wkhost.workflow.status"] == "running"
    assert "wkhost.workflow.step" not in start.attributes  # no step recorded yet

    waiting = alarm_span(spans, "waiting")  # packed both, waits for "ship"
    last = workflow(packer, "steps")["steps"][-1]["pos"]
    assert last > 0
    assert waiting.attributes is not None
    assert waiting.attributes["wkhost.workflow.run_id"] == run_id
    assert waiting.attributes["wkhost.workflow.step"] == last

    workflow(packer, "event", {"name": "ship", "payload": "van"})
    done = alarm_span(spans, "completed")
    assert done.attributes is not None
    assert done.attributes["wkhost.workflow.run_id"] == run_id
    assert done.attributes["wkhost.workflow.step"] == workflow(packer, "steps")["steps"][-1]["pos"]
    assert done.attributes["wkhost.workflow.step"] > last


def test_a_workflows_place_is_read_from_its_tables_only(tmp_path: Path) -> None:
    """storage/workflow_place.py reads the SDK's tables with the host's rights: a guest's
    view of that name is refused there, never run, and the event has no place."""
    db = ActorDb(tmp_path / "a.db", 1000)
    try:
        assert workflow_place(db) is None  # no such table: not a workflow
        db.guest_exec("CREATE TABLE t (run_id, state, id)", (), False)
        db.guest_exec("INSERT INTO t VALUES ('r', 'waiting', 1)", (), False)
        db.guest_exec("CREATE VIEW _wk_wf AS SELECT * FROM t", (), False)
        db.guest_exec("CREATE TABLE _wk_wf_step (pos INTEGER PRIMARY KEY)", (), False)
        assert workflow_place(db) is None
        db.guest_exec("DROP VIEW _wk_wf", (), False)
        db.guest_exec("ALTER TABLE t RENAME TO _wk_wf", (), False)
        assert workflow_place(db) == ("r", "waiting", None)
        db.guest_exec("INSERT INTO _wk_wf_step VALUES (0), (3)", (), False)
        assert workflow_place(db) == ("r", "waiting", 3)
    finally:
        db.close()
    assert workflow_place(None) is None
