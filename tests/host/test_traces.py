"""OpenTelemetry traces from an in-process Host serving the probe, through the SDK's
in-memory exporter: a span per event, an actor call and a fetch as CLIENT spans (the
callee under the caller's call span; no span per SQL statement), a trap's span marked,
`traceparent` on a guest's fetch only to a destination --trace-propagate names, the front
door's SERVER span with HTTP's attributes, its event's too, under a client's
`traceparent` (a malformed one ignored), and a workflow run's step attempts as spans in
the trace its start began."""

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
from opentelemetry.trace import SpanKind, StatusCode
from wkhost import tracing
from wkhost.config import HostConfig
from wkhost.core.host import Host
from wkhost.errors import BudgetExceeded, GuestFailed, HostError
from wkhost.fetch import FetchPolicy
from wkhost.net.frontdoor import make_app
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
    assert call.kind == SpanKind.CLIENT and call in children(done, caller)
    assert call.attributes is not None
    assert (call.attributes["wkhost.callee.class"], call.attributes["wkhost.callee.id"],
            call.attributes["http.response.status_code"]) == ("inner", "b", 200)
    callee = one(done, "request inner", **{"wkhost.actor_id": "b"})
    assert children(done, call) == [callee]
    assert {s.context.trace_id for s in (caller, call, callee)} == {caller.context.trace_id}
    # A SQL statement is no span of its own (host/tracing.py says why).
    assert children(done, callee) == [] and len(done) == 3


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
    assert len(fetches) == 2 and {s.kind for s in fetches} == {SpanKind.CLIENT}
    attrs = fetches[0].attributes or {}
    assert (attrs["http.request.method"], attrs["server.address"], attrs["server.port"],
            attrs["url.full"], attrs["http.response.status_code"]) == (
        "GET", "127.0.0.1", allowed.server_port, f"http://127.0.0.1:{allowed.server_port}/",
        200)
    sent = allowed.seen[0]["traceparent"]
    first = fetches[0].context
    assert sent.startswith(f"00-{first.trace_id:032x}-{first.span_id:016x}-"), sent
    # Elsewhere the guest's own header goes as the guest wrote it, and no trace of ours.
    assert other.seen[0]["traceparent"] == "00-" + "1" * 32 + "-" + "2" * 16 + "-01"


def test_a_bad_trace_destination_is_refused_by_name(make_probe: MakeProbe) -> None:
    with pytest.raises(HostError, match="--trace-propagate: .*'no such:host:1'"):
        make_probe(trace_propagate="127.0.0.1:80,no such:host:1")


def test_a_guests_spans_are_bounded_and_a_trap_ends_those_left_open(
        spans: InMemorySpanExporter, make_probe: MakeProbe) -> None:
    from wkhost import guest_spans

    probe = make_probe()
    out = probe.json("g", "POST", "/spans", {"names": ["n" * 500, "inner"],
                                             "attributes": {"a.b": "1", "c d": "x" * 2000}})
    assert out["handles"] == [1, 2]
    done = list(spans.get_finished_spans())
    outer, inner = one(done, "n" * guest_spans.MAX_NAME), one(done, "inner")
    event = one(done, "request probe")
    assert children(done, event) == [outer] and children(done, outer) == [inner]
    assert outer.attributes is not None and outer.attributes["a.b"] == "1"
    assert len(str(outer.attributes["c_d"])) == 1024

    names = [f"s{i}" for i in range(guest_spans.MAX_OPEN + 2)]
    handles = probe.json("h", "POST", "/spans", {"names": names})["handles"]
    assert handles == [*range(1, guest_spans.MAX_OPEN + 1), 0, 0]

    spans.clear()
    with pytest.raises(GuestFailed, match="trap inside spans"):
        probe.send("t", "POST", "/spans", b'{"names": ["left"], "end": false, "trap": true}')
    left = one(list(spans.get_finished_spans()), "left")
    assert left.status.status_code == StatusCode.ERROR
    assert left.status.description == "the event ended first (trap)"


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


def test_the_front_doors_server_span_is_under_a_clients_traceparent(
        spans: InMemorySpanExporter, make_probe: MakeProbe) -> None:
    probe = make_probe()
    status = through_front_door(probe, "/probe/c/now?secret=1", {
        "traceparent": f"00-{CLIENT_TRACE}-{CLIENT_SPAN}-01", "tracestate": "vendor=x1",
        "User-Agent": "curl/8"})
    assert status == 200
    done = list(spans.get_finished_spans())
    server = one(done, "GET /probe/{id}")
    assert server.kind == SpanKind.SERVER
    assert server.context is not None and server.parent is not None
    assert server.context.trace_id == int(CLIENT_TRACE, 16)
    assert server.parent.span_id == int(CLIENT_SPAN, 16) and server.parent.is_remote
    assert server.context.trace_state.get("vendor") == "x1"
    attrs = server.attributes or {}
    assert (attrs["http.request.method"], attrs["url.path"], attrs["http.route"],
            attrs["http.response.status_code"], attrs["user_agent.original"],
            attrs["server.address"], attrs["client.address"]) == (
        "GET", "/probe/c/now", "/probe/{id}/{path}", 200, "curl/8", "127.0.0.1", "127.0.0.1")
    assert "secret" not in str(attrs)
    # It is its event's span too: one span a request.
    assert (attrs["wkhost.class"], attrs["wkhost.actor_id"], attrs["wkhost.kind"],
            attrs["wkhost.outcome"]) == ("probe", "c", "request", "ok")
    assert done == [server]


def test_a_front_door_refusal_is_its_server_spans_status(
        spans: InMemorySpanExporter, make_probe: MakeProbe) -> None:
    probe = make_probe(cpu_budget_ms=100)
    assert through_front_door(probe, "/probe/s/spin", {}) == 503
    server = one(list(spans.get_finished_spans()), "GET /probe/{id}")
    assert (server.attributes or {})["http.response.status_code"] == 503
    assert server.status.status_code == StatusCode.ERROR


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
    span = one(list(spans.get_finished_spans()), "GET /probe/{id}")
    assert span.parent is None and span.context is not None
    assert span.context.trace_id != int(CLIENT_TRACE, 16)


def test_with_tracing_off_a_clients_trace_is_not_read() -> None:
    assert tracing.tracer is None
    assert tracing.from_client({"traceparent": f"00-{CLIENT_TRACE}-{CLIENT_SPAN}-01"}) == {}


# -- a workflow run's step attempts ---------------------------------------------------------

@pytest.fixture
def shop(tmp_path: Path, build_guest: Callable[[str], Path],
         spans: InMemorySpanExporter) -> Iterator[Probe]:
    """A host serving tests/guests/wf_failures.py as "shop", tracing on (`spans` first)."""
    wasm = build_guest("wf_failures")
    clock = FakeClock(START_MS)
    host = Host(HostConfig(data_dir=tmp_path / "data", cache_dir=COMPILED), clock)
    try:
        host.add_class("shop", wasm)
        host.start()
        yield Probe(host, clock)
    finally:
        host.close(timeout_s=2)


def workflow(shop: Probe, id: str, route: str, doc: dict[str, Any] | None = None) -> Any:
    resp = shop.send(id, "POST", f"/wk-workflow/v1/{route}", cbor2.dumps(doc or {}),
                     cls="shop")
    assert resp.status == 200, resp.body
    return cbor2.loads(resp.body)


def test_a_runs_attempts_are_spans_in_the_trace_its_start_began(
        shop: Probe, spans: InMemorySpanExporter) -> None:
    """A run's start, its first run and its retry are three events, three traces of their
    own: the two attempts of its step are both in the start's, each linked to the event
    that ran it, the failed one with its exception."""
    run_id = workflow(shop, "f", "start", {"input": {"flaky": 1}})["run_id"]

    def attempts() -> list[ReadableSpan]:
        return [s for s in spans.get_finished_spans() if s.name == "step charge"]

    assert wait_until(lambda: len(attempts()) == 1)
    shop.clock.jump(1000)  # the backoff: the retry is the alarm's
    assert wait_until(lambda: len(attempts()) == 2), [s.name for s in spans.get_finished_spans()]

    def linked_ended() -> bool:  # an event's span ends after the attempts it ran
        ended = {s.context.span_id for s in spans.get_finished_spans()}
        return all(link.context.span_id in ended for s in attempts() for link in s.links)

    assert wait_until(linked_ended)
    done = list(spans.get_finished_spans())
    start = one(done, "request shop")
    failed, returned = attempts()
    for span, n, outcome in ((failed, "1", "failed"), (returned, "2", "returned")):
        attrs = span.attributes or {}
        assert (attrs["wkhost.workflow.run_id"], attrs["wkhost.workflow.position"],
                attrs["wkhost.workflow.attempt"], attrs["wkhost.workflow.outcome"]) == (
            run_id, "0", n, outcome)
        assert int(attrs["wkhost.fuel"]) > 0
        assert span.parent is not None and span.parent.span_id == start.context.span_id
        assert span.context.trace_id == start.context.trace_id
    ran_in = []  # the alarm events that ran them: a start's run begins in its alarm
    for span in (failed, returned):
        (link,) = span.links
        (event,) = [s for s in done if s.context.span_id == link.context.span_id]
        assert event.name == "alarm shop" and event.context.trace_id != start.context.trace_id
        ran_in.append(event.context.span_id)
    assert ran_in[0] != ran_in[1]
    assert failed.status.status_code == StatusCode.ERROR
    (exc,) = failed.events
    assert exc.name == "exception" and exc.attributes is not None
    assert (exc.attributes["exception.type"], exc.attributes["exception.message"]) == (
        "ConnectionError", "the bank refused attempt 1")
    assert "_call_bank" in str(exc.attributes["exception.stacktrace"])
    assert returned.status.status_code == StatusCode.UNSET
