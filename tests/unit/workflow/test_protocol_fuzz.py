"""Malformed wk-workflow/v1 messages, fuzzed with hypothesis, against the runner's real
Protocol and Runner on the fake host (tests/e2e/test_hostile_input.py sends the same
kind of bodies to a real `wkhost serve`).

Properties: no message makes the instance trap (the fake host counts traps); every
answer is a status of the protocol with a CBOR map body, and every refusal says why;
and an instance started before the fuzz, which the fuzz keeps hitting (everything but
its cancel and its "approved" event), still completes with the right output.
"""

from __future__ import annotations

import math
from typing import Any

import cbor2
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from wkguest.workflow import Config, Run, cbor
from wkguest.workflow.status import PREFIX
from wkguest.workflow.testing import FakeHost

DAY = 86_400_000
ALLOWED = {200, 400, 403, 404, 405, 409, 413, 429}
ROUTES = ["start", "status", "event", "cancel", "steps", "summary"]
IDS = ["keep", "f1", "f2", "f3"]  # "keep" is the instance that must come through


def flow(wf: Run, inp: Any) -> Any:
    a = wf.step("a", lambda: inp["x"] * 2 if isinstance(inp, dict) and "x" in inp else inp)
    wf.sleep("nap", 1000)
    ev = wf.wait_for_event("approved", DAY)
    b = wf.step("b", lambda: [a, ev])
    return {"a": a, "b": b}


# -- what the fuzz sends -----------------------------------------------------------------

scalars = (st.none() | st.booleans()
           | st.integers(min_value=-(2**70), max_value=2**70)
           | st.floats(allow_nan=True, allow_infinity=True)
           | st.text(max_size=30) | st.binary(max_size=30))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=16)
field_names = st.sampled_from(["input", "name", "payload", "from", "limit"]) | st.text(max_size=6)
messages = (st.dictionaries(field_names, values, max_size=4)
            | st.fixed_dictionaries({}, optional={
                "input": values, "name": st.text(max_size=12) | values, "payload": values,
                "from": values, "limit": values}))


def _cbor2(v: Any) -> bytes:
    """Any CBOR, including what the protocol refuses (tags for big ints, ...)."""
    return cbor2.dumps(v)


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    """A valid message with bytes flipped, cut or added."""
    raw = bytearray(cbor.dumps({"name": draw(st.text(max_size=10)),
                                "payload": draw(st.integers(0, 2**32)),
                                "input": {"x": draw(st.integers(0, 100))}}))
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["flip", "cut", "add"]))
        i = draw(st.integers(0, max(0, len(raw) - 1)))
        if op == "flip" and raw:
            raw[i] ^= 1 << draw(st.integers(0, 7))
        elif op == "cut":
            del raw[i:]
        else:
            raw[i:i] = draw(st.binary(min_size=1, max_size=4))
    return bytes(raw)


CRAFTED = [
    b"", b"\xff", b"\x00", b"\xa1", b"\xbf\xff",            # empty, break, int, short map
    b"\x5b\xff\xff\xff\xff\xff\xff\xff\xff",                 # bytes of length 2**64 - 1
    b"\x9b\xff\xff\xff\xff\xff\xff\xff\xff",                 # an array of 2**64 - 1 items
    b"\xbb\x00\x00\x00\x01\x00\x00\x00\x00",                 # a map of 2**32 pairs
    b"\x81" * 500 + b"\x00",                                 # nested 500 deep
    b"\xa1\x64name\xc1\x00",                                 # a tag inside
    b"\xa1\x64name\x62\xc3\x28",                             # invalid UTF-8
    b"\xa2\x64name\x61a\x64name\x61b",                       # duplicate keys
    b"\xa1\x01\x02",                                         # a non-text key
    b"\xa1\x64name\x61a\x00",                                # trailing bytes
    b"\xa1\x65input\xf7",                                    # undefined
    b"\xa1\x64name\x78\x20" + b"\x01" * 32,                  # a control char in a name
    cbor.dumps({"name": "x" * 300}),                         # a name too long
    cbor.dumps({"name": "n", "payload": "y" * 2_000_000}),   # over max_value_bytes
    cbor.dumps({"from": -1}), cbor.dumps({"limit": True}),
    cbor.dumps({"from": 2**63, "limit": 2**64 - 1}),
    cbor.dumps([1, 2, 3]), cbor.dumps("start"), cbor.dumps(None),
]

bodies = (messages.map(_cbor2) | st.binary(max_size=64) | mutated()
          | st.sampled_from(CRAFTED) | values.map(_cbor2))


@st.composite
def requests(draw: st.DrawFn) -> tuple[str, str, str, bytes, str]:
    """(id, method, path, body, sender)."""
    # Mostly real routes, methods and senders, so that most bodies reach the parsing.
    route = draw(st.sampled_from(ROUTES * 6 + ["", "nope", "start/x", "Status", "event "]))
    path = draw(st.sampled_from([PREFIX + route] * 8 + [
        "/wk-workflow/v2/" + route, "/wk-workflow/v1", "/" + route, PREFIX.upper() + route]))
    method = draw(st.sampled_from(["POST"] * 8 + ["GET", "PUT", "DELETE"]))
    sender = draw(st.sampled_from(["actor"] * 4 + ["operator"] * 4 + ["public"]))
    body = draw(bodies)
    target = draw(st.sampled_from(IDS))
    if target == "keep" and (route == "cancel" or b"approved" in body):
        target = "f1"  # everything but what would legitimately end or approve it
    return target, method, path, body, sender


def check_reply(status: int, out: bytes) -> None:
    assert status in ALLOWED, (status, out[:200])
    msg = cbor.loads(out)
    assert isinstance(msg, dict), msg
    if status != 200:
        assert isinstance(msg.get("error"), str) and isinstance(msg.get("message"), str), msg


@pytest.mark.parametrize("always_replay", [False, True], ids=["warm", "always-replay"])
def test_fuzzed_messages_never_crash_or_corrupt_an_instance(always_replay: bool) -> None:
    host = FakeHost(always_replay=always_replay)
    host.serve("orders", flow, Config(max_events=50))
    status, out = host.call("orders", "keep", "POST", PREFIX + "start",
                            cbor.dumps({"input": {"x": 21}}), "operator")
    assert status == 200
    run_id = cbor.loads(out)["run_id"]
    host.run_due()
    sent = {"events": 0}

    @settings(max_examples=400, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(requests(), st.integers(0, 3000))
    @example(("keep", "POST", PREFIX + "steps", cbor.dumps({"from": 2**63}), "actor"), 0)
    def fuzz(req: tuple[str, str, str, bytes, str], tick: int) -> None:
        target, method, path, body, sender = req
        traps = host.traps
        status, out = host.call("orders", target, method, path, body, sender)
        assert host.traps == traps, f"{method} {path} {body[:60]!r} trapped the instance"
        check_reply(status, out)
        if target == "keep" and path.endswith("/event") and status == 200:
            sent["events"] += 1
        host.advance(tick)  # the instances run between messages (fired alarms too)
        assert host.traps == traps, "a run after the fuzzed message trapped"

    fuzz()

    # The instance that took the whole fuzz: same run, every answer intact, completes.
    status, out = host.call("orders", "keep", "POST", PREFIX + "status", b"", "operator")
    st_ = cbor.loads(out)
    assert status == 200 and st_["run_id"] == run_id, st_
    assert st_["state"] == "waiting" and st_["waiting_for"] == ["approved"], st_
    assert st_["events_pending"] == min(sent["events"], 50)  # kept, up to max_events
    status, out = host.call("orders", "keep", "POST", PREFIX + "event",
                            cbor.dumps({"name": "approved", "payload": {"by": "ann"}}),
                            "operator")
    assert status == 200, cbor.loads(out)
    host.advance(0)
    status, out = host.call("orders", "keep", "POST", PREFIX + "status", b"", "operator")
    done = cbor.loads(out)
    assert done["state"] == "completed", done
    assert done["output"] == {"a": 42, "b": [42, {"by": "ann"}]}
    # Every instance the fuzz made answers its status from a whole database.
    for (cls, id_), inst in list(host.instances.items()):
        assert inst.backend.rows("PRAGMA integrity_check") == [("ok",)]
        status, out = host.call(cls, id_, "POST", PREFIX + "status", b"", "operator")
        assert status == 200, (id_, cbor.loads(out))
        s = cbor.loads(out)
        assert s["state"] in ("running", "waiting", "completed", "failed", "cancelled"), s
        if s["state"] == "failed":  # a fuzzed input the flow could not use: said clearly
            assert s["error"], s
    assert host.traps == 0


@pytest.mark.parametrize("msg", [{"from": 2**63}, {"from": 2**64 - 1},
                                 {"from": 0, "limit": 2**64 - 1}])
def test_paging_numbers_past_what_sqlite_holds_are_refused_not_a_trap(msg: Any) -> None:
    """`steps` takes "from" and "limit" as whole numbers >= 0; CBOR carries up to 2**64-1,
    SQLite up to 2**63-1. A number past it must be a 400 (or clamped), not a parameter
    the store cannot bind (the instance trapped: a 500 on a real host)."""
    host = FakeHost()
    host.serve("orders", flow)
    host.call("orders", "p", "POST", PREFIX + "start", b"", "operator")
    status, out = host.call("orders", "p", "POST", PREFIX + "steps", cbor.dumps(msg), "actor")
    assert host.traps == 0, f"steps {msg} trapped the instance"
    check_reply(status, out)
    assert status in (200, 400), (status, cbor.loads(out))


@pytest.mark.parametrize(("value", "kept"), [
    (2**64 - 1, True), (-(2**64), True), (2**64, False), (-(2**64) - 1, False),
    (math.inf, True), (-math.inf, True), (-0.0, True), (5e-324, True),
    (1.7976931348623157e308, True)])
def test_values_at_the_edges_are_kept_exactly_or_refused(value: Any, kept: bool) -> None:
    """Ints beyond the CBOR subset come as bignum tags: refused (400), never stored
    wrong; floats at the edges come back exactly."""
    host = FakeHost()

    def echo(wf: Run, inp: Any) -> Any:
        return wf.wait_for_event("v", DAY)

    host.serve("orders", echo)
    host.call("orders", "e", "POST", PREFIX + "start", b"", "operator")
    host.run_due()
    status, out = host.call("orders", "e", "POST", PREFIX + "event",
                            cbor2.dumps({"name": "v", "payload": value}), "operator")
    check_reply(status, out)
    assert status == (200 if kept else 400), cbor.loads(out)
    if kept:
        host.run_due()
        _, out = host.call("orders", "e", "POST", PREFIX + "status", b"", "operator")
        got = cbor.loads(out)["output"]
        assert got == value and math.copysign(1, got) == math.copysign(1, value)
