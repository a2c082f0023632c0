"""A request that names its protocol (`wk-protocol`) reaches only a class whose
component declares it (host/engine/components.py's `component_protocols`): the probe declares none,
so such a request runs none of its code, from an operator or from another actor."""

from __future__ import annotations

import json

import pytest
from wkhost.errors import NotThatProtocol
from wkhost.types import Request, Sender

from .support import MakeProbe


def test_a_request_in_an_undeclared_protocol_runs_nothing(make_probe: MakeProbe) -> None:
    p = make_probe()
    assert p.host.classes["probe"].protocols == frozenset()
    ref = p.host.actor_ref("probe", "p1")
    body = json.dumps({"sql": "CREATE TABLE t (x); INSERT INTO t VALUES (1)"}).encode()
    headers = [("content-type", "application/json"), ("wk-protocol", "wk-workflow/v1")]
    with pytest.raises(NotThatProtocol, match="does not declare the protocol 'wk-workflow/v1'"):
        p.host.request(ref, Request("POST", "/sql", "", headers, body), Sender.operator())
    # Nothing ran: the actor was never even made.
    assert p.host.list_actors("probe") == []
    assert "error" in p.sql("p1", "SELECT count(*) FROM t")  # no such table
    # Without the header, the same request is the probe's.
    assert "error" not in p.sql("p1", "CREATE TABLE t (x)")


def test_an_actor_call_in_an_undeclared_protocol_is_refused_to_the_caller(
        make_probe: MakeProbe) -> None:
    p = make_probe()
    out = p.json("caller", "POST", "/call", {
        "cls": "probe", "id": "callee", "method": "POST", "path": "/sql",
        "headers": [["wk-protocol", "wk-workflow/v1"]],
        "body": json.dumps({"sql": "CREATE TABLE t (x)"})})
    assert "does not declare the protocol" in json.dumps(out), out
    assert "callee" not in p.host.list_actors("probe")
