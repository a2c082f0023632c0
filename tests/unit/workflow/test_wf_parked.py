"""Parked instances: a failure that is not the workflow's own (a reordered deploy, a
recorded value that no longer decodes, runs that keep ending without returning, a mistake
in the code) parks the instance instead of failing it. Parked is not finished: it runs
nothing, holds no alarm, is never deleted by retention, still records events, and a
status that waits for it to rest is answered."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from wkguest.workflow import Config, Run, WorkflowError, cbor
from wkguest.workflow.protocol import HOLD_MS
from wkguest.workflow.status import PREFIX
from wkguest.workflow.testing import FakeHost, Trap

DAY = 86_400_000
VERSION = {"v": 1}


def _versioned(run: Run, _: Any) -> Any:
    """v1 sleeps after its first step; v2 (a deploy) swaps that step with another."""
    names = ["reserve", "charge"] if VERSION["v"] == 1 else ["charge", "reserve"]
    run.step(names[0], lambda: 1)
    run.sleep("cool-off", 100)
    run.step(names[1], lambda: 2)
    return "done"


def _reorder(host: FakeHost) -> None:
    VERSION["v"] = 2


def _corrupt_result(host: FakeHost) -> None:
    inst = host.instance("w", "1")
    inst.backend.conn.execute("UPDATE _wk_wf_step SET result = '{not json' WHERE pos = 0")
    inst.runner.forget()  # as a new process would: it reads the journal fresh


def _corrupt_input(host: FakeHost) -> None:
    inst = host.instance("w", "1")
    inst.backend.conn.execute("UPDATE _wk_wf SET input = '\"\\u0000q\"', input_tagged = 1")
    inst.runner.forget()


CAUSES: dict[str, tuple[Callable[[FakeHost], None], str]] = {
    "reordered": (_reorder, "the code changed the order of its steps: position 0"),
    "a result that no longer decodes": (_corrupt_result, "the journal's results do not decode"),
    "an input that no longer decodes": (_corrupt_input, "the stored input does not decode"),
}


@pytest.fixture(autouse=True)
def _v1() -> None:
    VERSION["v"] = 1


def _parked(host: FakeHost, cause: str, config: Config | None = None) -> Any:
    """An instance of `_versioned` asleep after its first step, then `cause` and its wake."""
    host.serve("w", _versioned, config)
    c = host.client("w")
    c.start("1", "in")
    host.run_due()
    assert c.status("1").state == "waiting"
    CAUSES[cause][0](host)
    host.advance(100)
    return c


@pytest.mark.parametrize("cause", CAUSES)
def test_a_failure_not_the_workflows_own_parks_at_once_saying_why(
        any_host: FakeHost, cause: str) -> None:
    c = _parked(any_host, cause)
    s = c.status("1")
    assert (s.state, s.is_parked, s.is_finished, s.is_resting) == ("parked", True, False, True)
    assert CAUSES[cause][1] in (s.error or ""), s.error
    assert s.parked_at == any_host.clock.now()
    assert (s.wake_at, s.waiting_for, s.output) == (None, (), None)
    assert any_host.instance("w", "1").backend.alarm is None
    assert [st["state"] for st in _steps(any_host)] == ["done", "sleeping"]  # kept as is


def test_repeated_bad_runs_park_with_the_last_reason(any_host: FakeHost) -> None:
    any_host.serve("w", lambda run, _: [][1], Config(attempts=1))
    c = any_host.client("w")
    c.start("1")
    any_host.run_due()
    assert c.status("1").state == "running"  # one bad run: it backs off
    any_host.advance(1000)
    s = c.status("1")
    assert s.state == "parked", s
    assert "2 runs in a row ended without the workflow function returning" in (s.error or "")
    assert "IndexError" in (s.error or "")
    assert any_host.instance("w", "1").backend.alarm is None


def test_a_bad_tag_in_a_recorded_value_parks_after_the_bad_runs(any_host: FakeHost) -> None:
    """A tagged value whose tag no longer reads raises from the replayed step, outside
    any step of the run: the bad runs' rule parks it."""
    any_host.serve("w", lambda run, _: [run.step("a", lambda: b"\x00"), run.sleep("z", 10)],
                   Config(attempts=1))
    c = any_host.client("w")
    c.start("1")
    any_host.run_due()
    inst = any_host.instance("w", "1")
    inst.backend.conn.execute("UPDATE _wk_wf_step SET result = '\"\\u0000q\"' WHERE pos = 0")
    inst.runner.forget()
    any_host.advance(10)
    any_host.advance(1000)
    s = c.status("1")
    assert s.state == "parked" and "unknown value tag 'q'" in (s.error or ""), s


def test_a_mistake_in_a_first_run_that_a_start_waits_for_answers_parked(
        any_host: FakeHost) -> None:
    """An operator's waiting start runs the first run in its own event: it parks there,
    and the start's answer says so, without a hold (parked is a resting state)."""
    any_host.serve("w", lambda run, _: run.sleep("nap", -1))
    out = _handle(any_host, "start", {"input": 1, "wait_ms": 5000})
    m = cbor.loads(out.body)
    assert (m["state"], m["created"]) == ("parked", True)
    assert "wf.sleep('nap') must be 0 or more" in m["error"]
    assert HOLD_MS not in dict(out.headers)
    assert any_host.instance("w", "1").backend.alarm is None


def test_a_parked_instance_runs_nothing_and_retention_keeps_it(any_host: FakeHost) -> None:
    ran: list[int] = []

    def wf(run: Run, _: Any) -> Any:
        ran.append(1)
        return _versioned(run, _)

    any_host.serve("w", wf, Config(retention_ms=DAY))
    c = any_host.client("w")
    c.start("1")
    any_host.run_due()
    VERSION["v"] = 2
    any_host.advance(100)
    before = c.status("1")
    assert before.state == "parked"
    runs = len(ran)
    b = any_host.instance("w", "1").backend
    any_host.advance(30 * DAY)
    b.alarm = any_host.clock.now()  # a stray alarm (the host's retry of a cut event, say)
    any_host.run_due()
    assert len(ran) == runs
    assert b.alarm is None
    assert ("w", "1") in any_host.instances
    assert c.status("1") == before


def test_events_to_a_parked_instance_are_recorded_and_do_not_wake_it(
        any_host: FakeHost) -> None:
    c = _parked(any_host, "reordered")
    b = any_host.instance("w", "1").backend
    c.send_event("1", "approved", {"by": "ann"})
    c.send_event("1", "approved", {"by": "bob"})
    assert b.alarm is None
    assert any_host.run_due() == 0
    s = c.status("1")
    assert s.state == "parked"
    assert b.rows("SELECT name, payload FROM _wk_wf_event ORDER BY seq") == [
        ("approved", '{"by":"ann"}'), ("approved", '{"by":"bob"}')]
    summary = cbor.loads(_handle(any_host, "summary", {}).body)
    assert summary["events_pending"] == 2


def test_a_waiting_status_is_answered_when_the_instance_parks(host: FakeHost) -> None:
    host.serve("w", lambda run, _: (_ for _ in ()).throw(Trap("stuck")), Config(attempts=1))
    c = host.client("w")
    c.start("1")
    host.run_due()
    held = _handle(host, "status", {"wait_ms": 60_000})
    assert cbor.loads(held.body)["state"] == "running"
    assert dict(held.headers)[HOLD_MS] == "60000"  # held: it will move on
    for _ in range(5):  # the bad runs' backoffs, then the run that parks it
        host.advance(1000)
    again = _handle(host, "status", {"wait_ms": 60_000})  # the host delivers it again
    m = cbor.loads(again.body)
    assert m["state"] == "parked", m
    assert "2 runs in a row" in m["error"] and "its last event was cut" in m["error"], m
    assert HOLD_MS not in dict(again.headers)
    assert m["parked_at"] == m["updated_at"]


def test_a_start_of_a_parked_id_finds_it_and_a_cancel_ends_it(any_host: FakeHost) -> None:
    c = _parked(any_host, "reordered", Config(retention_ms=DAY))
    parked = c.status("1")
    again = c.start("1", "other")
    assert (again.state, again.created, again.run_id) == ("parked", False, parked.run_id)
    s = c.cancel("1")
    assert (s.state, s.is_finished, s.error) == ("cancelled", True, None)
    b = any_host.instance("w", "1").backend
    assert b.alarm == any_host.clock.now() + DAY  # the retention alarm, as for any cancel
    with pytest.raises(WorkflowError) as e:
        c.send_event("1", "x")
    assert e.value.kind == "finished"


def _handle(host: FakeHost, route: str, msg: Any) -> Any:
    """One operator request to w/1, with the runner's whole Reply (headers too)."""
    holder: list[Any] = []

    def action(inst: Any) -> Any:
        holder.append(inst.protocol.handle("POST", PREFIX + route, cbor.dumps(msg),
                                           "operator"))
        return holder[-1]

    host._event("w", "1", action)  # noqa: SLF001 - the fake host's event, with its rules
    return holder[0]


def _steps(host: FakeHost) -> list[dict[str, Any]]:
    return list(cbor.loads(_handle(host, "steps", {}).body)["steps"])
