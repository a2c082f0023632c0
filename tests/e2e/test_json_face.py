"""wk-workflow/v1 in JSON through a real server (host/net/json_face.py): two carts
(examples/workflows/cart/app.py) driven alike, one in CBOR and one in JSON, answer
alike on every route; reads of one instance answer the same in both; values past what
JSON carries come back tagged; bad JSON is refused in the protocol's form."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import cbor2
import pytest
from wkhost.net.json_face import from_json

from .server import Server

CLS = "carts"
# Fields that differ between two instances driven alike: their ids and times.
_VARIES = {"run_id", "created_at", "updated_at", "finished_at", "accepted_at", "done_at",
           "at", "wake_at", "started_at", "ended_at"}


@pytest.fixture(scope="module")
def server(build_guest: Callable[[str], Path], tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[Server]:
    s = Server(tmp_path_factory.mktemp("json") / "data",
               {CLS: build_guest("examples/workflows/cart/app.py")}, ["--fake-clock"]).start()
    try:
        yield s
    finally:
        s.stop()


def ctype(headers: dict[str, str]) -> str:
    return {k.lower(): v for k, v in headers.items()}.get("content-type", "")


def cbor_call(s: Server, id: str, route: str, msg: Any) -> tuple[int, Any]:
    st, headers, body = s.request("POST", f"/{CLS}/{id}/wk-workflow/v1/{route}",
                                  cbor2.dumps(msg), {"Content-Type": "application/cbor"},
                                  operator=True)
    assert ctype(headers).startswith("application/cbor"), (st, body)
    return st, cbor2.loads(body)


def json_call(s: Server, id: str, route: str, msg: Any, accept: str | None = None
              ) -> tuple[int, Any]:
    headers = {"Content-Type": "application/json", **({"Accept": accept} if accept else {})}
    st, got, body = s.request("POST", f"/{CLS}/{id}/wk-workflow/v1/{route}",
                              json.dumps(msg).encode(), headers, operator=True)
    assert ctype(got).startswith("application/json"), (st, body)
    return st, json.loads(body)


def revived(doc: Any) -> Any:
    """A JSON answer's values as the CBOR one carries them (the tags read)."""
    return from_json(json.dumps(doc).encode())


def alike(v: Any) -> Any:
    """`v` with what differs between two instances driven alike left out."""
    if isinstance(v, dict):
        return {k: alike(x) for k, x in v.items() if k not in _VARIES and k != "id"}
    if isinstance(v, list):
        return [alike(x) for x in v]
    return v


STEPS = [("start", {"input": None, "wait_ms": 5000}),
         ("update", {"name": "add", "arg": "book", "id": "u-1", "wait_ms": 20000}),
         ("update", {"name": "add", "arg": "book"}),  # refused by the validator: a 422
         ("update", {"name": "nope"}),  # no such handler: a 404
         ("query", {"name": "items"}), ("status", {}), ("summary", {}),
         ("steps", {"from": 0, "values": True}), ("events", {"after": 0}),
         ("event", {"name": "checkout", "payload": {"by": "ann", "big": 2**60,
                                                   "raw": "\u0000b/w=="}}),
         ("status", {"wait_ms": 20000}), ("cancel", {})]


def test_every_route_answers_alike_in_json_and_cbor(server: Server) -> None:
    for route, msg in STEPS:
        a = cbor_call(server, "c-cbor", route, msg if route != "event" else {
            **msg, "payload": {"by": "ann", "big": 2**60, "raw": b"\xff"}})
        b = json_call(server, "c-json", route, msg)
        assert a[0] == b[0], (route, a, b)
        if route in ("status", "event") and msg.get("wait_ms"):
            assert b[1]["output"]["paid_by"] == {"by": "ann", "big": "\u0000i1152921504606846976",
                                                 "raw": "\u0000b/w=="}, b
            assert a[1]["output"]["paid_by"] == {"by": "ann", "big": 2**60, "raw": b"\xff"}, a
            continue
        assert alike(a[1]) == alike(revived(b[1])), (route, a, b)


def test_reads_of_one_instance_are_the_same_both_ways(server: Server) -> None:
    cbor_call(server, "c-read", "start", {"input": None, "wait_ms": 5000})
    cbor_call(server, "c-read", "update", {"name": "add", "arg": "pen", "wait_ms": 20000})
    for route, msg in (("status", {}), ("steps", {"values": True}), ("query", {"name": "items"})):
        a, b = cbor_call(server, "c-read", route, msg), json_call(server, "c-read", route, msg)
        assert a[0] == b[0] and a[1] == revived(b[1]), route
    # A CBOR request answered in JSON, asked by Accept; and the other way round.
    st, got, body = server.request("POST", f"/{CLS}/c-read/wk-workflow/v1/status",
                                   cbor2.dumps({}), {"Content-Type": "application/cbor",
                                                     "Accept": "application/json"},
                                   operator=True)
    assert json.loads(body)["state"] == "waiting"
    st, b = json_call(server, "c-read", "status", {}, accept="application/json")
    assert b["state"] == "waiting"


@pytest.mark.parametrize("body", [b"{", b'{"input": NaN}', b'{"input": "\\u0000zq"}'])
def test_json_outside_the_subset_is_refused_in_the_protocols_form(server: Server,
                                                                 body: bytes) -> None:
    st, headers, out = server.request("POST", f"/{CLS}/c-bad/wk-workflow/v1/start", body,
                                      {"Content-Type": "application/json"}, operator=True)
    assert st == 400 and json.loads(out)["error"] == "bad-request", out
    st, _, out = server.request("POST", f"/{CLS}/c-bad/wk-workflow/v1/status", b"{}",
                                {"Content-Type": "application/json"}, operator=True)
    assert st == 404 and json.loads(out)["error"] == "unknown"  # nothing was started


def test_the_server_serves_its_openapi_document(server: Server) -> None:
    st, _, body = server.request("GET", "/_wk/openapi.json")  # no token: it is public
    doc = json.loads(body)
    assert st == 200 and doc["openapi"].startswith("3.1")
    assert "/{class}/{id}/wk-workflow/v1/update" in doc["paths"]
