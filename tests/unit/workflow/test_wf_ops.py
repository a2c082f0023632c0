"""An operator's moves (ops.py) in both replay modes: terminate, pause and resume, rescue.

terminate ends an instance at once, compensating nothing, and terminates its children
not detached; pause starts no new work, keeps no alarm, records events, and is a resting
state for a wait; resume goes on where it stopped; rescue runs a parked instance (a bad
deploy, the right code back) or a failed one (its last failed step with fresh attempts)
again, and is refused once compensations have run.
"""

from __future__ import annotations

from typing import Any

import pytest
from wkguest.workflow import Config, Run, WorkflowError, cbor
from wkguest.workflow.protocol import HOLD_MS
from wkguest.workflow.status import PREFIX
from wkguest.workflow.testing import FakeHost

DAY = 86_400_000
RAN: list[str] = []
CODE = {"order": ["reserve", "charge"], "charge_fails": True}


@pytest.fixture(autouse=True)
def _reset() -> None:
    RAN.clear()
    CODE.update(order=["reserve", "charge"], charge_fails=True)


def _did(name: str) -> Any:
    def f() -> str:
        RAN.append(name)
        if name == "charge" and CODE["charge_fails"]:
            raise RuntimeError("the card was declined")
        return name
    return f


def shop(wf: Run, inp: Any) -> Any:
    """Two steps in the order CODE says, a sleep between; charge fails while CODE says."""
    first, second = CODE["order"]
    a = wf.step(first, _did(first))
    wf.sleep("cool-off", 1000)
    return [a, wf.step(second, _did(second))]


def saga(wf: Run, inp: Any) -> Any:
    wf.step("reserve", _did("reserve"), compensate=lambda: RAN.append("release"))
    return wf.step("charge", _did("charge"))


def served(host: FakeHost, fn: Any = shop, attempts: int = 2) -> Any:
    host.serve("w", fn, Config(attempts=attempts, backoff_ms=1000, retention_ms=DAY))
    return host.client("w")


def test_terminate_during_a_backoff_ends_it_at_once_running_nothing_more(
        any_host: FakeHost) -> None:
    c = served(any_host, saga, attempts=5)
    c.start("1")
    any_host.run_due()
    assert (c.status("1").state, RAN) == ("running", ["reserve", "charge"])  # in backoff
    s = c.terminate("1", "wrong customer")
    assert (s.state, s.is_finished, s.error) == (
        "terminated", True, "terminated by an operator: wrong customer")
    assert any_host.instance("w", "1").backend.alarm == any_host.clock.now() + DAY
    any_host.advance(60_000)
    assert RAN == ["reserve", "charge"]  # no retry, and no compensation
    assert c.terminate("1").state == "terminated"  # again: nothing changes
    with pytest.raises(WorkflowError) as e:
        c.send_event("1", "go")
    assert e.value.kind == "finished"
    any_host.advance(DAY)  # retention applies
    with pytest.raises(WorkflowError, match="no such workflow instance"):
        c.status("1")


def waiter(wf: Run, inp: Any) -> Any:
    return wf.wait_for_event("go", DAY)


def two_kids(wf: Run, inp: Any) -> Any:
    a = wf.spawn("kid", "attached", None)
    d = wf.spawn("kid", "detached", None, detach=True)
    return [wf.join(a), wf.join(d)]


def test_a_terminated_parent_terminates_its_children_but_not_a_detached_one(
        any_host: FakeHost) -> None:
    any_host.serve("kid", waiter, Config())
    c = served(any_host, two_kids)
    kids = any_host.client("kid")
    c.start("p")
    any_host.run_due()
    c.terminate("p")
    attached = kids.status("attached")
    assert (attached.state, attached.error) == (
        "terminated", "terminated by an operator: its parent was terminated")
    assert kids.status("detached").state == "waiting"


def test_a_paused_instance_starts_nothing_keeps_events_and_resumes_where_it_stopped(
        any_host: FakeHost) -> None:
    def approvals(wf: Run, inp: Any) -> Any:
        a = wf.step("a", _did("a"))
        got = wf.wait_for_event("go", DAY)
        return [a, got, wf.step("b", _did("b"))]

    c = served(any_host, approvals)
    c.start("1")
    any_host.run_due()
    s = c.pause("1")
    assert (s.state, s.is_paused, s.is_resting, s.is_finished) == ("paused", True, True, False)
    assert s.paused_at == any_host.clock.now() and s.waiting_for == ("go",)
    assert any_host.instance("w", "1").backend.alarm is None
    assert c.pause("1").state == "paused"  # again: nothing changes
    c.send_event("1", "go", 7)  # recorded, no alarm
    assert any_host.instance("w", "1").backend.alarm is None
    any_host.advance(2 * DAY)  # the wait's deadline passes too: nothing runs
    assert (c.status("1").state, RAN) == ("paused", ["a"])
    status, _ = any_host.call("w", "1", "POST", PREFIX + "status",
                              cbor.dumps({"wait_ms": 5000}), "operator")
    assert status == 200  # a wait rests at a pause: answered now, not held
    assert c.resume("1").state == "waiting"
    any_host.run_due()
    s = c.status("1")
    assert (s.state, s.output, RAN) == ("completed", ["a", 7, "b"], ["a", "b"])


def test_pause_and_resume_refuse_the_states_they_do_not_take(any_host: FakeHost) -> None:
    c = served(any_host)
    c.start("1")
    any_host.run_due()
    with pytest.raises(WorkflowError, match="not paused: nothing to resume") as e:
        c.resume("1")
    assert (e.value.kind, e.value.status) == ("refused", 409)
    c.cancel("1")
    with pytest.raises(WorkflowError, match="only a running, waiting or compensating"):
        c.pause("1")


def test_a_paused_wait_is_not_held(any_host: FakeHost) -> None:
    c = served(any_host)
    c.start("1")
    any_host.run_due()
    c.pause("1")
    _, out = any_host.call("w", "1", "POST", PREFIX + "status", cbor.dumps({"wait_ms": 9}),
                           "operator")
    assert cbor.loads(out)["state"] == "paused"
    reply = any_host.instance("w", "1").protocol.handle(
        "POST", PREFIX + "status", cbor.dumps({"wait_ms": 9}), "operator")
    assert HOLD_MS not in dict(reply.headers)


def test_rescue_completes_a_parked_instance_once_the_right_code_is_back(
        any_host: FakeHost) -> None:
    CODE["charge_fails"] = False
    c = served(any_host)
    c.start("1")
    any_host.run_due()
    CODE["order"] = ["charge", "reserve"]  # a bad deploy
    any_host.advance(1000)
    assert c.status("1").state == "parked"
    CODE["order"] = ["reserve", "charge"]  # the right code goes back
    any_host.advance(DAY)
    assert c.status("1").state == "parked"  # nothing moves it on its own
    assert c.rescue("1").state == "running"
    any_host.run_due()
    s = c.status("1")
    assert (s.state, s.output, RAN) == ("completed", ["reserve", "charge"],
                                        ["reserve", "charge"])


def test_rescue_runs_a_failed_instances_failed_step_again_with_fresh_attempts(
        any_host: FakeHost) -> None:
    c = served(any_host)
    c.start("1")
    any_host.advance(1000)  # the sleep
    for _ in range(3):  # charge's two attempts
        any_host.advance(5000)
    s = c.status("1")
    assert (s.state, s.positions) == ("failed", 3), s
    CODE["charge_fails"] = False  # the fix is deployed
    r = c.rescue("1")
    assert (r.state, r.positions, r.error, r.is_finished) == ("running", 2, None, False)
    assert any_host.instance("w", "1").backend.alarm == any_host.clock.now()
    any_host.run_due()
    s = c.status("1")
    assert (s.state, s.output) == ("completed", ["reserve", "charge"])
    assert RAN == ["reserve", "charge", "charge", "charge"]  # reserve never again


def test_rescue_is_refused_once_compensations_have_run(any_host: FakeHost) -> None:
    c = served(any_host, saga, attempts=1)
    c.start("1")
    any_host.run_due()
    assert c.status("1").state == "failed" and RAN[-1] == "release"
    with pytest.raises(WorkflowError, match="compensations have run .* Restart it") as e:
        c.rescue("1")
    assert e.value.status == 409
    assert c.status("1").state == "failed"  # nothing changed
    any_host.serve("r", waiter, Config())
    any_host.client("r").start("2")
    with pytest.raises(WorkflowError, match="running: rescue takes a parked or a failed"):
        any_host.client("r").rescue("2")


def test_the_status_names_who_holds_it_when_asked(any_host: FakeHost) -> None:
    c = served(any_host)
    c.start("1")
    any_host.instance("w", "1").backend.holder_name = "process 2 of 4 (pid 1234)"
    assert c.status("1", held_by=True).held_by == "process 2 of 4 (pid 1234)"
    assert c.status("1").held_by is None  # not asked: the map stays as it was
