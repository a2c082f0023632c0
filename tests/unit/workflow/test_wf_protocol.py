"""wk-workflow/v1 as a client in another language would speak it: routes, fields, codes."""

from __future__ import annotations

from typing import Any

import cbor2
import pytest
from wkguest.workflow import Client, Run, Status, WorkflowError, cbor
from wkguest.workflow.testing import FakeHost

STATUS_KEYS = {"state", "run_id", "wake_at", "waiting_for", "error", "positions", "created_at",
               "updated_at", "finished_at", "events_pending"}


def order(run: Run, inp: Any) -> Any:
    a = run.step("a", lambda: inp)
    b = run.try_step("b", lambda: 1 / 0, attempts=1)
    run.sleep("nap", 100)
    return {"a": a, "b": b.error}


@pytest.fixture
def orders(host: FakeHost, raw: Any) -> Any:
    host.serve("orders", order)
    return raw("orders")


def test_start_status_and_fields(host: FakeHost, orders: Any) -> None:
    code, m = orders("o1", "start", {"input": {"x": b"\x00"}})
    assert code == 200 and m["created"] is True
    assert set(m) == STATUS_KEYS | {"created"}
    assert m["state"] == "running" and m["positions"] == 0 and m["waiting_for"] == []
    code, again = orders("o1", "start", {"input": "other"})
    assert again["created"] is False and again["run_id"] == m["run_id"]
    host.run_due()
    code, m = orders("o1", "status", method="GET")
    assert code == 200 and set(m) == STATUS_KEYS and m["state"] == "waiting"
    host.advance(100)
    code, m = orders("o1", "status")
    assert m["output"] == {"a": {"x": b"\x00"}, "b": "ZeroDivisionError: division by zero"}
    assert m["finished_at"] == host.clock.now()
    code, s = orders("o1", "summary")
    assert code == 200 and "output" not in s and s["state"] == "completed"


def test_a_new_starts_reply_is_what_status_reads_back(host: FakeHost, orders: Any) -> None:
    # start builds its reply from the row it inserted rather than reading it back.
    code, started = orders("o1", "start", {"input": [1, "two"]})
    assert code == 200 and started.pop("created") is True
    assert orders("o1", "status")[1] == started


def test_start_without_a_body_has_input_none(host: FakeHost, orders: Any) -> None:
    orders("o1", "start")
    host.run_due()
    host.advance(100)
    assert orders("o1", "status")[1]["output"]["a"] is None


def test_responses_are_cbor(host: FakeHost) -> None:
    host.serve("w", order)
    inst_reply = host.call("w", "1", "POST", "/wk-workflow/v1/start", b"")
    assert inst_reply[0] == 200
    out = host.instance("w", "1").protocol.handle("GET", "/wk-workflow/v1/status", b"", "actor")
    assert ("content-type", "application/cbor") in out.headers


@pytest.mark.parametrize(("sender", "code"), [("public", 403), ("actor", 200),
                                              ("operator", 200)])
def test_only_actors_and_operators(host: FakeHost, orders: Any, sender: str, code: int) -> None:
    orders("o1", "start")
    got, m = orders("o1", "status", sender=sender)
    assert got == code
    if code == 403:
        assert m["error"] == "forbidden"
    got, _ = orders("ghost", "start", sender=sender)
    assert (("orders", "ghost") in host.instances) == (code == 200)


@pytest.mark.parametrize(("method", "path", "code", "kind"), [
    ("POST", "/", 404, "route"),
    ("POST", "/wk-workflow/v2/status", 404, "route"),
    ("POST", "/wk-workflow/v1/nope", 404, "route"),
    ("GET", "/wk-workflow/v1/start", 405, "method"),
    ("GET", "/wk-workflow/v1/event", 405, "method"),
])
def test_routes_methods_and_versions(host: FakeHost, method: str, path: str, code: int,
                                     kind: str) -> None:
    host.serve("w", order)
    host.client("w").start("1")
    got, body = host.call("w", "1", method, path)
    assert got == code and cbor.loads(body)["error"] == kind
    got, body = host.call("w", "ghost", method, path)
    assert got == code and ("w", "ghost") not in host.instances


@pytest.mark.parametrize("body", [b"\xff", b"\x83\x01", cbor.dumps([1, 2]), cbor.dumps("x")])
def test_malformed_bodies_are_400(host: FakeHost, body: bytes) -> None:
    host.serve("w", order)
    got, out = host.call("w", "1", "POST", "/wk-workflow/v1/start", body)
    assert got == 400 and cbor.loads(out)["error"] == "bad-request"
    assert host.instances == {}


def test_bad_event_names_and_values(host: FakeHost, orders: Any) -> None:
    orders("o1", "start")
    assert orders("o1", "event", {"payload": 1})[0] == 400
    assert orders("o1", "event", {"name": "a\nb"})[0] == 400
    code, m = orders("o1", "event", {"name": "ok", "payload": {"deep": [1.5, None, True]}})
    assert code == 200 and m == {"events_pending": 1}
    tagged = cbor2.dumps({"name": "t", "payload": cbor2.CBORTag(1, 5)})  # tags: not in v1
    assert host.call("orders", "o1", "POST", "/wk-workflow/v1/event", tagged)[0] == 400


def test_steps_pages_through_positions(host: FakeHost, raw: Any) -> None:
    def many(run: Run, _: Any) -> Any:
        for i in range(7):
            run.step(f"s{i}", lambda i=i: "x" * i)
        run.try_step("bad", lambda: [][0], attempts=2, backoff_ms=50)
        return run.wait_for_event("e", 1000)

    host.serve("m", many)
    m = raw("m")
    m("1", "start")
    host.run_due()
    code, page = m("1", "steps", {"limit": 3})
    assert code == 200 and [s["pos"] for s in page["steps"]] == [0, 1, 2] and page["next"] == 3
    assert page["steps"][2] == {"pos": 2, "name": "s2", "kind": "step", "state": "done",
                                "attempts": 1, "error": None, "next_attempt_at": None,
                                "wake_at": None, "result_bytes": 4, "event_seq": None,
                                "updated_at": host.clock.now()}
    code, page = m("1", "steps", {"from": 6, "limit": 10})
    bad = page["steps"][1]
    assert page["next"] is None and (bad["state"], bad["attempts"]) == ("retrying", 1)
    assert bad["error"] == "IndexError: list index out of range"
    assert bad["next_attempt_at"] == host.clock.now() + 50
    host.advance(50)
    last = m("1", "steps", {"from": 7})[1]["steps"]
    assert [(s["kind"], s["state"]) for s in last] == [("step", "failed"), ("wait", "waiting")]
    assert m("1", "steps", {"limit": -1})[0] == 400
    assert m("1", "steps", {"from": "x"})[0] == 400


def test_storage_failure_in_a_request_is_503(host: FakeHost, orders: Any) -> None:
    orders("o1", "start")
    host.instance("orders", "o1").backend.fail_when = lambda m, sql: True
    code, m = orders("o1", "status")
    assert code == 503 and m["error"] == "storage"


def test_client_error_kinds() -> None:
    def failing(id: str, method: str, path: str, body: bytes) -> tuple[int, bytes]:
        raise WorkflowError("call", "refused: re-entry")

    with pytest.raises(WorkflowError) as e:
        Client("w", transport=failing).status("1")
    assert e.value.kind == "call"

    def garbage(id: str, method: str, path: str, body: bytes) -> tuple[int, bytes]:
        return 500, b"the instance trapped"

    with pytest.raises(WorkflowError) as e:
        Client("w", transport=garbage).status("1")
    assert (e.value.kind, e.value.status, e.value.message) == (
        "refused", 500, "the instance trapped")

    def bad_status(id: str, method: str, path: str, body: bytes) -> tuple[int, bytes]:
        return 200, cbor.dumps({"state": "sleeping"})

    with pytest.raises(WorkflowError, match="malformed status"):
        Client("w", transport=bad_status).status("1")


def test_status_from_map_defaults() -> None:
    s = Status.from_map({"state": "waiting", "wake_at": 5, "waiting_for": ["a"]})
    assert s == Status("waiting", 5, ("a",), None, None, 0, "")
    assert not s.is_finished and Status("failed").is_finished


def test_client_outside_a_component_needs_a_transport() -> None:
    with pytest.raises(RuntimeError, match="needs the actors binding"):
        Client("w")
