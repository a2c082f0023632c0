"""OpenTelemetry traces from an in-process Host serving the probe, through the SDK's
in-memory exporter: a span per event with a child per host call, an actor call's callee
under the caller's call span, a trap's span marked, and `traceparent` on a guest's fetch
only to a destination --trace-propagate names."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from wkhost import tracing
from wkhost.core.config import HostConfig
from wkhost.errors import BudgetExceeded, GuestFailed, HostError
from wkhost.fetch import FetchPolicy

from .support import MakeProbe


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
    with pytest.raises(GuestFailed, match="guest trapped"):
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
