"""Queries: `wf.query(name, handler)` answers `Client.query(id, name, arg)` from the state
a dry replay of the recorded journal reaches. It runs nothing new and writes nothing.
"""

from __future__ import annotations

from typing import Any

import pytest
from wkguest.workflow import Config, Run, WorkflowError
from wkguest.workflow.testing import FakeHost

DAY = 86_400_000
WRITES = ("exec", "exec_durable", "alarm_set", "alarm_clear")
RAN: list[str] = []


def step(name: str, value: Any) -> Any:
    def f() -> Any:
        RAN.append(name)
        return value
    return f


def order(wf: Run, inp: Any) -> Any:
    state: dict[str, Any] = {"stage": "new", "paid": 0}
    wf.query("progress", lambda arg: {**state, "arg": arg})
    wf.query("stage", lambda arg: state["stage"])
    state["paid"] = wf.step("charge", step("charge", inp["amount"]))
    state["stage"] = "charged"
    wf.emit("charged", state["paid"])
    ship = wf.wait_for_event("ship", DAY)
    state["stage"] = f"shipped by {ship}"
    wf.step("notify", step("notify", None))
    state["stage"] = "done"
    return state["paid"]


@pytest.fixture(autouse=True)
def _clear() -> None:
    RAN.clear()


def started(host: FakeHost, fn: Any = order) -> Any:
    host.serve("o", fn, Config())
    c = host.client("o")
    c.start("1", {"amount": 30})
    host.run_due()
    return c


def writes(host: FakeHost) -> dict[str, int]:
    calls = host.instance("o", "1").backend.calls
    return {k: calls[k] for k in WRITES}


def test_a_query_answers_from_the_replayed_state(any_host: FakeHost) -> None:
    c = started(any_host)
    assert c.query("1", "progress", 7) == {"stage": "charged", "paid": 30, "arg": 7}
    assert c.query("1", "stage") == "charged"


def test_a_query_writes_nothing_and_runs_no_step(any_host: FakeHost) -> None:
    """The event that would wake it is there, the next step is due: the query takes
    neither, and the instance then goes on as if no query had come."""
    c = started(any_host)
    c.send_event("1", "ship", "ann")
    before, ran = writes(any_host), list(RAN)
    steps, events = c.status("1"), c.events("1")
    assert c.query("1", "stage") == "charged"  # stops at the unrecorded wait
    assert writes(any_host) == before and RAN == ran == ["charge"]
    assert (c.status("1"), c.events("1")) == (steps, events)
    assert any_host.instance("o", "1").backend.rows(
        "SELECT count(*) FROM _wk_wf_event") == [(1,)]
    any_host.run_due()
    assert c.status("1").output == 30 and RAN == ["charge", "notify"]
    assert c.query("1", "stage") == "done"


def test_a_query_of_a_step_in_backoff_does_not_attempt_it(any_host: FakeHost) -> None:
    tries: list[int] = []

    def flaky(wf: Run, inp: Any) -> Any:
        n = {"tries": 0}
        wf.query("n", lambda arg: n["tries"])
        wf.step("flaky", lambda: tries.append(1) or (_ for _ in ()).throw(OSError("no")))
        return n

    c = started(any_host, flaky)
    assert c.status("1").state == "running" and tries == [1]
    before = writes(any_host)
    assert c.query("1", "n") == 0
    assert tries == [1] and writes(any_host) == before


def test_a_query_of_a_finished_instance_replays_its_whole_journal(any_host: FakeHost) -> None:
    c = started(any_host)
    c.send_event("1", "ship", "bob")
    any_host.run_due()
    assert c.status("1").state == "completed"
    assert c.query("1", "progress") == {"stage": "done", "paid": 30, "arg": None}
    assert RAN == ["charge", "notify"]


def test_an_unknown_query_is_a_clear_error(any_host: FakeHost) -> None:
    c = started(any_host)
    with pytest.raises(WorkflowError) as e:
        c.query("1", "eta")
    assert e.value.kind == "no-query" and e.value.status == 404
    assert "no query 'eta' (it registers: progress, stage)" in e.value.message


def test_a_handler_may_not_call_primitives_or_fail_quietly(host: FakeHost) -> None:
    def wf(run: Run, inp: Any) -> None:
        run.query("sneaky", lambda arg: run.step("more", step("more", 1)))
        run.query("broken", lambda arg: 1 / 0)
        run.query("odd", lambda arg: {1, 2})
        run.wait_for_event("go", DAY)

    c = started(host, wf)
    before = writes(host)
    for name, says in (("sneaky", "may not call workflow primitives"),
                       ("broken", "ZeroDivisionError"), ("odd", "set")):
        with pytest.raises(WorkflowError) as e:
            c.query("1", name)
        assert (e.value.kind, e.value.status) == ("refused", 422) and says in e.value.message
    assert RAN == [] and writes(host) == before
    assert c.status("1").state == "waiting"


def test_a_journal_that_no_longer_replays_answers_no_state(host: FakeHost) -> None:
    c = started(host)
    host.instances[("o", "1")].runner.fn = lambda wf, inp: (
        wf.query("stage", lambda a: "?"), wf.step("refund", step("refund", 1)))
    with pytest.raises(WorkflowError) as e:
        c.query("1", "stage")
    assert e.value.status == 409 and "order of its steps" in e.value.message
    assert RAN == ["charge"] and c.status("1").state == "waiting"  # not parked by a query


def test_a_bad_query_name_is_refused_and_unknown_ids_leave_nothing(host: FakeHost) -> None:
    c = started(host)
    with pytest.raises(WorkflowError) as e:
        c.query("1", "")
    assert e.value.status == 400
    with pytest.raises(WorkflowError) as e:
        c.query("nobody", "stage")
    assert e.value.kind == "unknown" and ("o", "nobody") not in host.instances


def test_registering_a_query_takes_no_position(any_host: FakeHost) -> None:
    """A deploy that adds a query handler keeps every recorded history replaying."""
    def v1(wf: Run, inp: Any) -> Any:
        paid = wf.step("charge", step("charge", inp["amount"]))
        return [paid, wf.wait_for_event("ship", DAY)]

    def v2(wf: Run, inp: Any) -> Any:
        wf.query("where", lambda arg: wf.position)
        return v1(wf, inp)

    c = started(any_host, v1)
    with pytest.raises(WorkflowError):
        c.query("1", "where")
    any_host.serve("o", v2, Config())
    if not any_host.always_replay:
        any_host.instances[("o", "1")].runner.fn = v2
    assert c.query("1", "where") == 1  # called where the replay stopped: the wait
    c.send_event("1", "ship", "ann")
    any_host.run_due()
    assert c.status("1").output == [30, "ann"] and RAN == ["charge"]
