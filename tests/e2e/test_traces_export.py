"""`wkhost serve --processes 2 --otlp-endpoint URL` exports its spans over OTLP/HTTP to a
collector of the test's own (on 127.0.0.1): an actor's call into an actor of the other
process is one trace, the callee's event span a child of the caller's call span; a
client's `traceparent` is the parent of one event span, in the process that serves the
actor, whichever process accepted the request."""

from __future__ import annotations

import gzip
import http.server
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
)
from wkhost.partition import Partition

from .conftest import MakeServer


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
                        "parent": s.parent_span_id.hex(), "process": process, **attrs})
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
    caller = next(s for s in spans if s["name"] == "request probe"
                  and s["wkhost.actor_id"] == a)
    call = next(s for s in spans if s["name"] == "actors.call" and s["parent"] == caller["id"])
    callee = next(s for s in spans if s["name"] == "request inner"
                  and s["wkhost.actor_id"] == b)
    assert (caller["process"], callee["process"]) == (0, 1)
    assert callee["parent"] == call["id"]
    assert caller["trace"] == call["trace"] == callee["trace"]
    assert callee["wkhost.outcome"] == "ok"
    assert any(s["name"] == "lifecycle.now" and s["parent"] == callee["id"] for s in spans)



def test_a_clients_traceparent_is_one_parent_whichever_process_accepts(
        make_server: MakeServer, collector: Any) -> None:
    """Either process may accept a client's request (host/net/peers.py passes it on): the
    span whose parent is the client's is the event span of the process that serves the
    actor, and there is one, never a second from the process that passed it on. Requests
    to an actor of each process: whichever process accepts them, some are passed on."""
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
        assert [(s["name"], s["wkhost.actor_id"], s["process"], s["trace"])
                for s in under] == [("request probe", actor, owner, trace)], under


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
