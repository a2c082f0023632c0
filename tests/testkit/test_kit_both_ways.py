"""The test kit itself, each feature with the same assertions on plain CPython and, through
the switch, in the sandbox (the real built component in `wkhost serve --fake-clock`).

One kit per mode for the whole module (the sandbox's server start is paid once); each
test drives an instance of its own. The workflows are tests/guests/kit_flow.py's.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from wkguest.types import Response
from wkhost.testkit import Fetch, Kit, WorkflowClass
from wkhost.testkit.stubbed import Call

REPO = Path(__file__).resolve().parents[2]
FLOW = REPO / "tests" / "guests" / "kit_flow.py"
DAY = 86_400_000


def _quote(req: Fetch) -> Response:
    amount = int(req.url.rsplit("=", 1)[1])
    if amount < 0:
        raise ValueError("a negative amount")  # a handler's own bug: the fetch fails
    return Response.json({"fee": amount // 100})


def _pricing(call: Call) -> Response:
    return Response.json({"sku": call.path.rsplit("/", 1)[1], "query": call.query,
                          "by": call.sender, "cents": 1200})


def _shipping(id: str, input: Any) -> dict[str, Any]:
    if input["fragile"]:
        return {"error": "no courier takes glass"}
    return {"output": {"tracking": f"T-{id}"}}


@pytest.fixture(scope="module", params=["cpython", pytest.param("sandbox",
                                                                  marks=pytest.mark.e2e)])
def kit(request: pytest.FixtureRequest) -> Iterator[Kit]:
    kit = Kit(sandbox=request.param == "sandbox")
    kit.on_fetch("https://pay.example.test/quote", _quote)
    kit.on_call("pricing", _pricing)
    kit.mock_child("shipping", answer=_shipping)
    kit.serve_workflow("parents", FLOW)  # the same component, as a class of its own
    kit.serve_workflow("flows", FLOW)
    try:
        yield kit
    finally:
        kit.close()


@pytest.fixture
def flows(kit: Kit) -> WorkflowClass:
    return WorkflowClass(kit, "flows")


def test_a_run_skips_its_sleep_and_takes_the_event(flows: WorkflowClass) -> None:
    wf = flows.instance("happy")
    began = flows.kit.now()
    wf.start({"amount": 1200})
    st = wf.wait_for_wait("approved")
    assert st.state == "waiting" and st.waiting_for == ("approved",)
    assert flows.kit.now() - began >= 3 * DAY  # the 3-day sleep passed at once
    assert wf.query("progress") == {"at": "charged"}
    assert [(e.name, e.payload) for e in wf.events()] == [("charged", {"charge": "ch-1"})]
    wf.send_event("approved", {"by": "ann"})
    st = wf.wait_for_status("completed")
    assert st.output["quote"] == {"fee": 12}
    assert st.output["approved"] == {"by": "ann"}
    assert st.output["now"] - began >= 3 * DAY  # wf.now() moved with the clock
    assert [(s.kind, s.name) for s in wf.steps()] == [
        ("step", "quote"), ("step", "charge"), ("emit", "charged"), ("sleep", "cool-off"),
        ("wait", "approved"), ("now", "now")]
    assert {s.state for s in wf.steps()} == {"done"}
    assert wf.sql("SELECT attempt FROM charges") == [(1,)]


def test_backoffs_pass_and_each_attempt_keeps_its_traceback(flows: WorkflowClass) -> None:
    wf = flows.instance("flaky")
    wf.start({"amount": 100, "flaky": 2})
    wf.wait_for_wait("approved")
    charge = wf.step("charge")
    assert charge.attempts == 3
    assert [a.outcome for a in charge.history] == ["failed", "failed", "returned"]
    assert charge.history[0].error == "RuntimeError: the bank is busy (attempt 1)"
    assert "in charge" in (charge.history[0].traceback or "")
    assert charge.history[1].started_at - charge.history[0].started_at >= 60_000
    assert wf.sql("SELECT attempt FROM charges ORDER BY attempt") == [(1,), (2,), (3,)]


def test_a_mocked_result_never_runs_the_step(flows: WorkflowClass) -> None:
    wf = flows.instance("mock-result")
    wf.mock_step_result("charge", "ch-mocked")
    wf.start({"amount": 100, "flaky": 9})  # the real one would fail 9 times
    wf.wait_for_wait("approved")
    assert wf.step("charge").value == "ch-mocked"
    assert wf.sql("SELECT count(*) FROM sqlite_master WHERE name = 'charges'") == [(0,)]


def test_a_mocked_error_for_two_attempts_then_the_real_step(flows: WorkflowClass) -> None:
    wf = flows.instance("mock-error")
    wf.mock_step_error("charge", "card declined", times=2)
    wf.start({"amount": 100})
    wf.wait_for_wait("approved")
    charge = wf.step("charge")
    assert [(a.outcome, a.error) for a in charge.history] == [
        ("failed", "card declined"), ("failed", "card declined"), ("returned", None)]
    assert wf.sql("SELECT attempt FROM charges") == [(3,)]


def test_a_non_retryable_mocked_error_fails_the_workflow(flows: WorkflowClass) -> None:
    wf = flows.instance("mock-fatal")
    wf.mock_step_error("charge", "card stolen", non_retryable=True)
    wf.start({"amount": 100})
    st = wf.wait_for_status("failed")
    assert "card stolen" in (st.error or "")
    assert wf.step("charge").attempts == 1


def test_a_forced_timeout_then_the_real_step(flows: WorkflowClass) -> None:
    wf = flows.instance("mock-timeout")
    wf.force_step_timeout("charge", times=1)
    wf.start({"amount": 100})
    wf.wait_for_wait("approved")
    history = wf.step("charge").history
    assert [a.outcome for a in history] == ["timed-out", "returned"]
    assert "timed out" in (history[0].error or "")


def test_sleeps_disabled_and_the_event_wait_timed_out(flows: WorkflowClass) -> None:
    wf = flows.instance("no-waiting")
    wf.disable_sleeps()
    wf.force_event_timeout("approved")
    began = flows.kit.now()
    wf.start({"amount": 100})
    st = wf.wait_for_status("completed")
    assert st.output["approved"] is None
    assert flows.kit.now() - began < DAY  # neither the 3 days nor the day went by
    assert wf.step("approved").state == "timed-out"


def test_an_event_sent_ahead_is_taken_by_the_wait(flows: WorkflowClass) -> None:
    wf = flows.instance("event-ahead")
    wf.mock_event("approved", {"by": "bob"})  # before the start: Cloudflare's mockEvent
    wf.start({"amount": 100})
    assert wf.wait_for_status("completed").output["approved"] == {"by": "bob"}


def test_a_fetch_no_handler_answers_fails_as_denied(flows: WorkflowClass) -> None:
    wf = flows.instance("bad-quote")
    wf.start({"amount": -5})  # the handler raises: the fetch fails, the step retries
    quote = wf.step("quote")
    assert quote.state == "retrying"
    assert "the test's fetch handler for https://pay.example.test/quote raised " \
           "ValueError: a negative amount" in (quote.history[0].error or "")


def test_waiting_for_a_state_it_cannot_reach_says_where_it_is(flows: WorkflowClass) -> None:
    wf = flows.instance("stuck")
    wf.start({"amount": 100})
    wf.wait_for_wait("approved")
    with pytest.raises(AssertionError, match="waiting, waiting for approved"):
        wf.wait_for_status("completed", within="1 hour")
    json.dumps(wf.status().wake_at)  # still readable after the failed wait


def test_an_actor_the_test_answers_and_a_mocked_child(kit: Kit) -> None:
    parent = WorkflowClass(kit, "parents").instance("p-1")
    parent.start({"sku": "mug"})
    st = parent.wait_for_status("completed")
    assert st.output == {"price": {"sku": "mug", "query": "currency=EUR",
                                   "by": "actor parents/p-1", "cents": 1200},
                         "shipped": {"tracking": "T-ship-p-1"}}


def test_a_mocked_childs_failure_fails_its_parent(kit: Kit) -> None:
    parent = WorkflowClass(kit, "parents").instance("p-2")
    parent.start({"sku": "vase", "fragile": True})
    st = parent.wait_for_status("failed")
    assert "no courier takes glass" in (st.error or "")


def test_time_moved_on_demand_fires_each_alarm_at_its_time(flows: WorkflowClass) -> None:
    wf = flows.instance("on-demand")
    kit = flows.kit
    began = kit.now()
    wf.start({"amount": 100})  # runs what is due now: the steps, then the 3-day sleep
    assert wf.status().state == "waiting" and wf.status().waiting_for == ()
    kit.advance("3 days")  # the sleep ends at its time; the wait for approval begins
    st = wf.status()
    assert st.waiting_for == ("approved",)
    assert st.wake_at == began + 4 * DAY  # the wait's day, from when it began
    kit.advance("1 day")  # its timeout: the wait gives None and the run completes
    st = wf.status()
    assert st.state == "completed" and st.output["approved"] is None
    assert st.output["now"] == began + 4 * DAY
