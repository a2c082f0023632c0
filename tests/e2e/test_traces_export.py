"""`wkhost serve --otlp-endpoint URL` exports its spans over OTLP/HTTP to a collector of
the test's own (on 127.0.0.1). With `--processes 2`: an actor's call into an actor of the
other process is one trace, the callee's event span a child of the caller's CLIENT call
span; a client's `traceparent` is the parent of one SERVER span (its event's too), in the
process that serves the actor, whichever process accepted the request. A workflow run
started through the front door is one trace, the client's: each step attempt a span in
it, the ledger's calls CLIENT spans under their steps, the attempt a trap cut an error."""

from __future__ import annotations

import gzip
import http.server
import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
)
from opentelemetry.proto.trace.v1.trace_pb2 import Span
from wkhost.partition import Partition

from . import workflow_support
from .conftest import MakeServer
from .workflow_support import INTERNAL, ORDER, Shop, waiting_for

workflow_wasm = workflow_support.workflow_wasm  # the fixture, by name


class Collector(http.server.BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        req = ExportTraceServiceRequest.FromString(body)
        for rs in req.resource_spans:
            process = next(a.value.int_value for a in rs.resource.attributes
                           if a.key == "wkhost.process")
            for ss in rs.scope_spans:
                for s in ss.spans:
                    attrs = {a.key: a.value.string_value or a.value.int_value
                             for a in s.attributes}
                    self.server.spans.append({  # type: ignore[attr-defined]
                        "name": s.name, "trace": s.trace_id.hex(), "id": s.span_id.hex(),
                        "parent": s.parent_span_id.hex(), "process": process,
                        "kind": Span.SpanKind.Name(s.kind), "error": s.status.code == 2,
                        "links": [link.span_id.hex() for link in s.links], **attrs})
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *_: Any) -> None:
        pass


@pytest.fixture
def collector() -> Iterator[Any]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Collector)
    server.spans = []  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def ids_in_each_process() -> tuple[str, str]:
    owner = Partition(0, 2).owner
    a = next(f"a{i}" for i in range(100) if owner(f"a{i}") == 0)
    b = next(f"b{i}" for i in range(100) if owner(f"b{i}") == 1)
    return a, b


def test_a_call_across_processes_is_one_trace(make_server: MakeServer, collector: Any,
                                              probe_wasm: Path) -> None:
    endpoint = f"http://127.0.0.1:{collector.server_port}/v1/traces"
    server = make_server(extra=["--processes", "2", "--otlp-endpoint", endpoint])
    a, b = ids_in_each_process()
    status, out = server.actor("probe", a, "POST", "/call",
                               {"cls": "inner", "id": b, "path": "/now"}, operator=False)
    assert status == 200 and out["status"] == 200, out
    assert server.stop() == 0  # a clean stop sends what is batched
    spans = collector.spans
    # The front door's SERVER span is the caller's event's too.
    caller = next(s for s in spans if s["name"] == "POST /probe/{id}")
    assert caller["wkhost.actor_id"] == a and caller["wkhost.kind"] == "request"
    call = next(s for s in spans if s["name"] == "actors.call" and s["parent"] == caller["id"])
    callee = next(s for s in spans if s["name"] == "request inner"
                  and s["wkhost.actor_id"] == b)
    assert [s["kind"] for s in (caller, call, callee)] == [
        "SPAN_KIND_SERVER", "SPAN_KIND_CLIENT", "SPAN_KIND_INTERNAL"]
    assert (caller["process"], callee["process"]) == (0, 1)
    assert callee["parent"] == call["id"]
    assert caller["trace"] == call["trace"] == callee["trace"]
    assert callee["wkhost.outcome"] == "ok"
    assert not any(s["parent"] == callee["id"] for s in spans)  # no span per host call


def test_a_clients_traceparent_is_one_parent_whichever_process_accepts(
        make_server: MakeServer, collector: Any) -> None:
    """Either process may accept a client's request (host/net/peers.py passes it on): the
    span whose parent is the client's is the SERVER span of the process that serves the
    actor (its event's span too), and there is one, never a second from the process that
    passed it on. Requests to an actor of each process: whichever process
    accepts them, some are passed on."""
    endpoint = f"http://127.0.0.1:{collector.server_port}/v1/traces"
    server = make_server(extra=["--processes", "2", "--otlp-endpoint", endpoint])
    a, b = ids_in_each_process()
    sent = [(actor, owner, f"{0xabc0 + i:032x}", f"{0xdef0 + i:016x}")
            for i, (actor, owner) in enumerate([(a, 0), (b, 1)] * 4)]
    for actor, _, trace, span in sent:
        status, _, _ = server.request("GET", f"/probe/{actor}/now",
                                      headers={"traceparent": f"00-{trace}-{span}-01"})
        assert status == 200
    assert server.stop() == 0
    for actor, owner, trace, span in sent:
        under = [s for s in collector.spans if s["parent"] == span]
        assert [(s["name"], s["kind"], s["url.path"], s["wkhost.actor_id"], s["process"],
                 s["trace"]) for s in under] == [("GET /probe/{id}", "SPAN_KIND_SERVER",
                                                  f"/probe/{actor}/now", actor, owner, trace)]


def test_a_stop_does_not_wait_on_a_collector_that_never_answers(
        make_server: MakeServer) -> None:
    """A collector that takes connections and answers nothing: each export waits its
    timeout, again for every batch, so a stop that waited for them all took a minute or
    more. The stop flushes for a bounded time, says the rest is dropped, and exits 0."""
    with socket.create_server(("127.0.0.1", 0), backlog=64) as silent:  # never accepts
        endpoint = f"http://127.0.0.1:{silent.getsockname()[1]}/v1/traces"
        server = make_server(extra=["--otlp-endpoint", endpoint])
        for i in range(20):
            assert server.actor("probe", f"t{i}", "GET", "/now")[0] == 200
        assert server.stop() == 0, "\n".join(server.log[-20:])
    assert any("did not take the last spans" in line for line in server.log), server.log[-20:]


def test_a_workflow_run_is_one_trace_of_its_steps(
        make_server: MakeServer, collector: Any, workflow_wasm: dict[str, Path],
        probe_wasm: Path, tmp_path: Path) -> None:
    endpoint = f"http://127.0.0.1:{collector.server_port}/v1/traces"
    actors = {"orders": workflow_wasm["orders"], "ledger": workflow_wasm["ledger"],
              "app": workflow_wasm["app"], "probe": probe_wasm}
    shop = Shop(make_server(actors=actors, access=INTERNAL, data=tmp_path / "data",
                            extra=["--otlp-endpoint", endpoint]))
    trace, parent = "5" * 32, "6" * 16
    status, _, body = shop.server.request(
        "POST", "/app/web/orders/o1", json.dumps({**ORDER, "trap_in_pack": True}).encode(),
        headers={"traceparent": f"00-{trace}-{parent}-01", "content-type": "application/json"})
    assert status == 200, body
    run_id = shop.drive("o1", waiting_for("approved"))["run_id"]
    assert shop.server.stop() == 0
    spans = collector.spans
    (door,) = [s for s in spans if s["parent"] == parent]
    assert (door["name"], door["kind"], door["http.response.status_code"]) == (
        "POST /app/{id}", "SPAN_KIND_SERVER", 200)
    steps = [s for s in spans if s["name"].startswith("step ")]
    assert [(s["name"], s["wkhost.workflow.attempt"]) for s in steps] == [
        ("step reserve", "1"), ("step pack", "1"), ("step pack", "2")], steps
    assert {s["trace"] for s in steps} == {trace}  # the client's, across the run's events
    assert {s["wkhost.workflow.run_id"] for s in steps} == {run_id}
    cut, packed = steps[1:]
    assert cut["error"] and "wkhost.workflow.outcome" not in cut  # the trap ended it
    assert not packed["error"] and packed["wkhost.workflow.outcome"] == "returned"
    for step in (steps[0], packed):
        (call,) = [s for s in spans if s["parent"] == step["id"]]
        assert (call["name"], call["kind"], call["wkhost.callee.class"]) == (
            "actors.call", "SPAN_KIND_CLIENT", "ledger")
        (ledger,) = [s for s in spans if s["parent"] == call["id"]]
        assert ledger["name"] == "request ledger" and ledger["trace"] == trace
    # Each attempt is linked to the event that ran it, none of which is in the run's trace.
    ran = {s["id"]: s for s in spans}
    assert all(ran[s["links"][0]]["trace"] != trace for s in steps if s["links"])
