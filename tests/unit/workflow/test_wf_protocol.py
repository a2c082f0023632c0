"""wk-workflow/v1 as a client in another language would speak it: routes, fields, codes."""

from __future__ import annotations

from typing import Any

import cbor2
import pytest
from wkguest.workflow import Client, Config, Run, Status, WorkflowError, cbor
from wkguest.workflow.core.store import Store
from wkguest.workflow.core.values import encode
from wkguest.workflow.status import PREFIX
from wkguest.workflow.testing import FakeHost, Trap
from wkguest.workflow.testing.fakes import FakeBackend

STATUS_KEYS = {"state", "run_id", "wake_at", "waiting_for", "error", "positions", "created_at",
               "updated_at", "finished_at", "events_pending", "runs", "updates_pending"}


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


# -- an operator's start that waits runs the first run in its own event ---------------

def two_steps(run: Run, inp: Any) -> Any:
    return [run.step("a", lambda: inp), run.step("b", lambda: 2)]


def test_an_operators_waiting_start_runs_the_workflow_in_its_event(
        host: FakeHost, raw: Any) -> None:
    host.serve("w", two_steps)
    code, m = raw("w")("1", "start", {"input": "x", "wait_ms": 5000}, sender="operator")
    assert code == 200 and m["created"] is True
    assert m["state"] == "completed" and m["output"] == ["x", 2] and m["positions"] == 2
    assert host.due() is None  # nothing left for the alarm but the retention
    backend = host.instance("w", "1").backend
    assert backend.alarm == m["finished_at"] + Config().retention_ms
    backend.power_loss()  # the create rode on the finish's fsync
    assert raw("w")("1", "status")[1] == {k: v for k, v in m.items() if k != "created"}


@pytest.mark.parametrize("sender,msg", [("actor", {"wait_ms": 5000}), ("operator", {})],
                         ids=["an-actors-waiting-start", "an-operators-start-without-wait"])
def test_other_starts_only_record(host: FakeHost, raw: Any, sender: str, msg: Any) -> None:
    # An actor's start runs nothing in the caller's call chain (a step may call back
    # the actor that started it), and a start that does not wait answers at once.
    host.serve("w", two_steps)
    code, m = raw("w")("1", "start", {"input": "x", **msg}, sender=sender)
    assert code == 200 and m["state"] == "running" and m["positions"] == 0
    assert host.due() == ("w", "1")
    host.instance("w", "1").backend.power_loss()  # the start was durable by itself
    assert host.run_due() == 1 and raw("w")("1", "status")[1]["output"] == ["x", 2]


def test_a_first_run_that_syncs_nothing_still_makes_the_start_durable(
        host: FakeHost, raw: Any) -> None:
    def fails_outside_any_step(run: Run, _: Any) -> Any:
        raise RuntimeError("not in a step")

    host.serve("w", fails_outside_any_step)
    code, m = raw("w")("1", "start", {"wait_ms": 5000}, sender="operator")
    assert code == 200 and m["created"] is True and m["state"] == "running"
    assert "not in a step" in m["error"]
    backend = host.instance("w", "1").backend
    watchdog = backend.alarm
    backend.power_loss()
    code, after = raw("w")("1", "status")
    assert code == 200 and after["run_id"] == m["run_id"] and backend.alarm == watchdog


def test_a_first_run_that_waits_answers_with_its_state(host: FakeHost, orders: Any) -> None:
    code, m = orders("o1", "start", {"input": 1, "wait_ms": 5000}, sender="operator")
    assert code == 200 and m["created"] is True
    assert m["state"] == "waiting" and m["wake_at"] == host.clock.now() + 100
    host.instance("orders", "o1").backend.power_loss()
    assert orders("o1", "status")[1]["wake_at"] == m["wake_at"]
    host.advance(1000)  # the power loss took the alarm back to the run's watchdog
    assert orders("o1", "status")[1]["output"] == {"a": 1, "b": "ZeroDivisionError: "
                                                   "division by zero"}


def test_a_trap_in_the_first_run_leaves_the_instance_to_its_alarm(
        host: FakeHost, raw: Any) -> None:
    traps = iter([True])

    def traps_once(run: Run, _: Any) -> Any:
        if next(traps, False):
            raise Trap()
        return run.step("a", lambda: "done")

    host.serve("w", traps_once)
    code, _ = host.call("w", "1", "POST", PREFIX + "start", cbor.dumps({"wait_ms": 5000}),
                        "operator")
    assert code == 500  # the host's error for an event that trapped: no promise made
    assert raw("w")("1", "status")[1]["state"] == "running"  # the insert and its alarm
    # The trap dropped the instance that ran on_init: the next one reads what is there.
    assert raw("w")("1", "start", {"input": "other"})[1]["created"] is False
    host.advance(1000)
    assert raw("w")("1", "status")[1]["output"] == "done"


@pytest.mark.parametrize("value", [{"n": 3}, None, ("a", b"\x00")])
def test_the_first_run_is_handed_what_load_would_read(value: Any) -> None:
    store = Store(FakeBackend())
    store.init_schema()
    text, tagged = encode(value, 1 << 20, "the input")
    assert store.create("r1", text, tagged, 5)
    assert Store.just_created("r1", text, tagged) == store.load(0, "")


def _fails_in_a_step(run: Run, _: Any) -> Any:
    return run.step("a", lambda: 1 / 0, attempts=1)


def _no_sleep_no_wait(run: Run, _: Any) -> Any:
    run.sleep("none", 0)
    got = run.wait_for_event("nothing", 0)
    tried = run.try_step("t", lambda: int("x"), attempts=1)
    return [got, tried.error, run.step("b", lambda: b"\x00\x01")]


def _unencodable(run: Run, _: Any) -> Any:
    run.step("a", lambda: 1)
    return object()


def _bad_runs(run: Run, _: Any) -> Any:
    raise RuntimeError("outside any step")


def _takes_time(run: Run, clock: Any) -> Any:
    return run.step("a", lambda: clock.jump(7))  # the host's clock moves in the event


FIRST_RUNS = {"completed": two_steps, "takes-time": _takes_time,
              "step-failed": _fails_in_a_step,
              "fail": lambda run, _: run.fail("refused"),
              "no-sleep-no-wait": _no_sleep_no_wait, "unencodable": _unencodable,
              "a-bad-run": _bad_runs, "sleeps": order}


@pytest.mark.parametrize("fn", FIRST_RUNS.values(), ids=FIRST_RUNS.keys())
def test_a_first_runs_answer_is_what_status_reads_back(any_host: FakeHost, fn: Any) -> None:
    # The start that ran the instance builds its answer from the finish it wrote, not
    # by reading it back (protocol._finished_first).
    if fn is _takes_time:
        any_host.serve("w", lambda run, _: _takes_time(run, any_host.clock))
    else:
        any_host.serve("w", fn)

    def ask(route: str, msg: Any) -> Any:
        code, out = any_host.call("w", "1", "POST", PREFIX + route, cbor.dumps(msg), "operator")
        assert code == 200, out
        return cbor.loads(out)

    started = ask("start", {"input": 1, "wait_ms": 5000})
    assert started.pop("created") is True
    assert ask("status", {}) == started


def test_an_instance_created_begun_is_as_created_then_begun() -> None:
    rows = []
    for begun_in_the_insert in (False, True):
        db = FakeBackend()
        store = Store(db)
        store.init_schema()
        if begun_in_the_insert:
            store.create("r1", '"x"', False, 5, watchdog=1005)
        else:
            store.create("r1", '"x"', False, 5)
            store.begin_run(1, 1005, 5)
        rows.append(db.rows("SELECT * FROM _wk_wf"))
    assert rows[0] == rows[1] and rows[0][0][1] == "running"


def test_a_start_of_an_existing_id_says_whether_its_input_was_ignored(
        host: FakeHost, orders: Any) -> None:
    """The instance stays as it is whatever the start says; the answer tells the caller
    that it was not created, and whether the input it gave differs from the instance's
    (a map's key order is no difference; a value of another type is)."""
    given = {"b": [1, "two"], "a": {"x": b"\x00"}}
    code, m = orders("o1", "start", {"input": given})
    assert code == 200 and m["created"] is True and "input_differs" not in m
    same_other_order = {"a": {"x": b"\x00"}, "b": [1, "two"]}
    for other, differs in [(same_other_order, False), ({"a": 1}, True), ("text", True),
                           ({"a": {"x": "\x00"}, "b": [1, "two"]}, True), (None, True)]:
        code, again = orders("o1", "start", {"input": other})
        assert code == 200 and again["created"] is False, other
        assert again["input_differs"] is differs, other
        assert again["run_id"] == m["run_id"]
    code, again = orders("o1", "start", {})  # no input given: nothing to compare
    assert "input_differs" not in again
    host.run_due()
    host.advance(100)
    assert orders("o1", "status")[1]["output"]["a"] == given


def test_the_client_exposes_created_and_input_differs(host: FakeHost) -> None:
    host.serve("orders", order)

    def transport(id: str, method: str, path: str, body: bytes) -> tuple[int, bytes]:
        return host.call("orders", id, method, path, body, "actor")

    client = Client("orders", transport=transport)
    first = client.start("o1", {"n": 1})
    assert (first.created, first.input_differs) == (True, False)
    again = client.start("o1", {"n": 1})
    assert (again.created, again.input_differs) == (False, False)
    other = client.start("o1", {"n": 2})
    assert (other.created, other.input_differs) == (False, True)
