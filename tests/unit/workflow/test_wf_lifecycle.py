"""The instance's life: bad runs, the run budget, retention, cancel, unknown ids, faults,
and durability (a power loss never undoes what was reported)."""

from __future__ import annotations

from typing import Any

import pytest
from wkguest.workflow import Config, Run, WorkflowError
from wkguest.workflow.testing import FakeHost, Trap

DAY = 86_400_000


def test_traps_outside_steps_back_off_then_park_saying_why(host: FakeHost) -> None:
    def wf(run: Run, _: Any) -> Any:
        raise Trap("replay over its CPU budget")

    host.serve("w", wf, Config(attempts=2))
    c = host.client("w")
    c.start("1")
    t0 = host.clock.now()
    host.run_due()
    alarms = [host.instance("w", "1").backend.alarm]
    for _ in range(3):
        host.clock.ms = alarms[-1] or 0
        host.run_due()
        alarms.append(host.instance("w", "1").backend.alarm)
    assert [a - t0 for a in alarms if a] == [1000, 3000, 7000, 15000]  # 1 s, doubling
    assert c.status("1").state == "running"
    host.advance(100_000)
    s = c.status("1")
    assert s.state == "parked"
    assert "4 runs in a row ended without the workflow function returning" in (s.error or "")
    assert host.traps == 4


def test_a_run_that_records_a_new_step_made_progress_and_is_not_bad(host: FakeHost) -> None:
    """The count clears when a run reaches a step's attempt: a trap inside the step is
    that step's attempt, and a run that recorded new work was not stuck."""
    trapped: set[int] = set()

    def wf(run: Run, _: Any) -> Any:
        for i in range(6):
            run.step(f"s{i}", lambda: 1)
            if i not in trapped:  # each run records one step, then traps outside it
                trapped.add(i)
                raise Trap("after a new step")
        return "done"

    host.serve("w", wf, Config(attempts=1))  # 2 bad runs in a row would fail it
    c = host.client("w")
    c.start("1")
    for _ in range(10):
        host.advance(1000)
    assert c.status("1").output == "done"
    assert host.traps == 6


def test_an_event_during_a_bad_run_backoff_does_not_run_early(host: FakeHost) -> None:
    runs: list[int] = []

    def wf(run: Run, _: Any) -> Any:
        runs.append(host.clock.now())
        raise Trap("boom")

    host.serve("w", wf)
    c = host.client("w")
    c.start("1")
    host.run_due()
    c.send_event("1", "poke", None)
    host.run_due()
    assert len(runs) == 1


def test_exceptions_between_steps_are_bad_runs_with_their_reason(host: FakeHost) -> None:
    state = {"broken": True}

    def wf(run: Run, _: Any) -> Any:
        run.step("a", lambda: 1)
        if state["broken"]:
            raise KeyError("bug")
        return "fixed"

    host.serve("w", wf, Config(attempts=3))
    c = host.client("w")
    c.start("1")
    host.run_due()
    s = c.status("1")
    assert s.state == "running"
    assert s.error == "the workflow function raised KeyError: 'bug'"
    host.advance(1000)
    state["broken"] = False  # a deploy fixes the bug before the instance gives up
    host.advance(2000)
    s = c.status("1")
    assert (s.state, s.output, s.error) == ("completed", "fixed", None)


def test_exceptions_park_after_twice_the_attempts(host: FakeHost) -> None:
    host.serve("w", lambda run, _: [][1], Config(attempts=1))
    c = host.client("w")
    c.start("1")
    host.run_due()
    host.advance(1000)
    s = c.status("1")
    assert s.state == "parked"
    assert "2 runs in a row" in (s.error or "") and "IndexError" in (s.error or "")


def test_run_budget_continues_in_a_new_event(host: FakeHost) -> None:
    events: list[int] = []

    def slow(i: int) -> Any:
        def f() -> Any:
            host.clock.jump(600)
            return i
        return f

    def wf(run: Run, _: Any) -> Any:
        events.append(run.position)
        return [run.step(f"s{i}", slow(i)) for i in range(5)]

    host.serve("w", wf, Config(run_budget_ms=1000))
    c = host.client("w")
    c.start("1")
    inst = host.instance("w", "1")
    host.fire("w", "1")
    assert c.status("1").positions == 2
    assert inst.backend.alarm == host.clock.now()  # continues at once, in a new event
    assert c.status("1").state == "running"
    host.run_due()
    assert c.status("1").output == [0, 1, 2, 3, 4]
    assert len(events) == 3  # 2 + 2 + 1 steps


def test_run_budget_always_runs_at_least_one_step(host: FakeHost) -> None:
    def wf(run: Run, _: Any) -> Any:
        return [run.step(f"s{i}", lambda: host.clock.jump(10)) for i in range(3)]

    host.serve("w", wf, Config(run_budget_ms=0))
    c = host.client("w")
    c.start("1")
    assert host.run_due() == 3  # one new step per event, whatever the clock says
    assert c.status("1").state == "completed"


def test_retention_deletes_and_a_later_start_is_a_new_run(any_host: FakeHost) -> None:
    calls: list[str] = []
    any_host.serve("w", lambda run, _: run.step_keyed("s", lambda k: calls.append(k) or k),
                   Config(retention_ms=DAY))
    c = any_host.client("w")
    first = c.start("1", "in")
    any_host.run_due()
    assert c.status("1").state == "completed"
    done_at = any_host.clock.now()
    assert any_host.instance("w", "1").backend.alarm == done_at + DAY
    assert c.start("1", "again").run_id == first.run_id  # kept: start changes nothing
    any_host.advance(DAY - 1)
    assert c.status("1").state == "completed"
    any_host.advance(1)
    assert ("w", "1") not in any_host.instances
    with pytest.raises(WorkflowError) as e:
        c.status("1")
    assert e.value.kind == "unknown"
    second = c.start("1", "new")
    any_host.run_due()
    assert second.run_id != first.run_id
    assert calls == [f"{first.run_id}-0", f"{second.run_id}-0"]


def test_cancel_at_once_with_the_retention_alarm(any_host: FakeHost) -> None:
    any_host.serve("w", lambda run, _: run.sleep("long", 10 * DAY), Config(retention_ms=DAY))
    c = any_host.client("w")
    c.start("1")
    any_host.run_due()
    s = c.cancel("1")
    assert s.state == "cancelled" and s.is_finished
    assert any_host.instance("w", "1").backend.alarm == any_host.clock.now() + DAY
    assert c.cancel("1").state == "cancelled"  # again: unchanged
    with pytest.raises(WorkflowError) as e:
        c.send_event("1", "x", None)
    assert e.value.kind == "finished"
    any_host.advance(DAY)
    assert ("w", "1") not in any_host.instances


def test_cancel_a_completed_instance_changes_nothing(host: FakeHost) -> None:
    host.serve("w", lambda run, _: "out")
    c = host.client("w")
    c.start("1")
    host.run_due()
    assert c.cancel("1").state == "completed"


@pytest.mark.parametrize("call", ["status", "send_event", "cancel"])
def test_unknown_ids_answer_unknown_and_leave_nothing(host: FakeHost, call: str) -> None:
    host.serve("w", lambda run, _: None)
    c = host.client("w")
    args = ("ghost", "e", None) if call == "send_event" else ("ghost",)
    with pytest.raises(WorkflowError) as e:
        getattr(c, call)(*args)
    assert e.value.kind == "unknown" and e.value.status == 404
    assert host.instances == {}


def test_an_alarm_on_a_never_started_actor_deletes_it(host: FakeHost) -> None:
    host.serve("w", lambda run, _: None)
    host.fire("w", "stray")
    assert host.instances == {}


def test_start_is_idempotent_while_kept(host: FakeHost) -> None:
    host.serve("w", lambda run, inp: run.wait_for_event("e", DAY) or inp)
    c = host.client("w")
    a = c.start("1", "first")
    b = c.start("1", "second")
    assert a.run_id == b.run_id
    c.send_event("1", "e", None)
    host.run_due()
    assert c.status("1").output == "first"


def test_events_are_capped(host: FakeHost) -> None:
    host.serve("w", lambda run, _: run.sleep("s", DAY), Config(max_events=2))
    c = host.client("w")
    c.start("1")
    c.send_event("1", "a", 1)
    c.send_event("1", "a", 2)
    with pytest.raises(WorkflowError) as e:
        c.send_event("1", "a", 3)
    assert (e.value.kind, e.value.status) == ("refused", 429)
    assert "2 events that no wait has taken (Config.max_events)" in e.value.message


def test_inputs_and_payloads_over_the_limit_are_refused(host: FakeHost) -> None:
    host.serve("w", lambda run, _: run.sleep("s", DAY), Config(max_value_bytes=100))
    c = host.client("w")
    with pytest.raises(WorkflowError) as e:
        c.start("big", "x" * 200)
    assert e.value.status == 413 and "the input is 202 bytes" in e.value.message
    assert host.instances == {}  # nothing left behind
    c.start("1", "ok")
    with pytest.raises(WorkflowError) as e:
        c.send_event("1", "e", b"x" * 200)
    assert e.value.status == 413 and "over the limit of 100 bytes" in e.value.message


def test_storage_faults_are_retried_never_a_failed_workflow(host: FakeHost) -> None:
    calls: list[int] = []
    host.serve("w", lambda run, _: [run.step(f"s{i}", lambda: calls.append(1) or len(calls))
                                    for i in range(3)], Config(attempts=1))
    c = host.client("w")
    c.start("1")
    b = host.instance("w", "1").backend
    faults = {"left": 6}

    def fail(method: str, sql: str) -> bool:
        if faults["left"] and (method == "exec_durable" or "bad_runs" in sql):
            faults["left"] -= 1
            return True
        return False

    b.fail_when = fail
    for _ in range(30):
        host.advance(1000)
    s = c.status("1")
    assert s.state == "completed", s
    assert faults["left"] == 0
    assert host.traps == 0  # each fault ended its event cleanly, with a retry alarm


def test_storage_down_everywhere_traps_and_the_host_retries(host: FakeHost) -> None:
    host.serve("w", lambda run, _: run.step("s", lambda: "ok"), Config(attempts=1))
    c = host.client("w")
    c.start("1")
    b = host.instance("w", "1").backend
    b.fail_when = lambda method, sql: True
    host.run_due()
    assert host.traps == 1 and b.alarm is not None  # the host's own retry
    b.fail_when = None
    host.advance(1000)
    assert c.status("1").output == "ok"


def test_a_power_loss_never_undoes_a_reported_state(host: FakeHost) -> None:
    ran: list[str] = []

    def wf(run: Run, _: Any) -> Any:
        a = run.step("a", lambda: ran.append("a") or "A")
        run.sleep("nap", 1000)
        e = run.wait_for_event("go", DAY)
        return [a, e]

    host.serve("w", wf)
    c = host.client("w")

    def check() -> None:
        before = c.status("1")
        host.instance("w", "1").backend.power_loss()
        after = c.status("1")
        assert after == before
        if not after.is_finished:
            assert host.instance("w", "1").backend.alarm is not None

    c.start("1")
    check()
    host.run_due()
    check()
    host.advance(1000)
    check()
    c.send_event("1", "go", "now")
    check()
    host.run_due()
    check()
    assert c.status("1").output == ["A", "now"] and ran == ["a"]


def test_on_init_trap_means_not_created(host: FakeHost) -> None:
    host.serve("w", lambda run, _: None)
    host.instances.clear()
    original = host._create  # noqa: SLF001 - poke the fake host's creation path

    def broken(cls: str, id: str) -> Any:
        inst = original(cls, id)
        assert inst is not None
        raise Trap("on_init")

    host._create = broken  # type: ignore[method-assign]
    with pytest.raises(Trap):
        host.call("w", "1", "POST", "/wk-workflow/v1/status")


def test_a_run_of_new_steps_syncs_once_and_sets_its_alarm_twice(host: FakeHost) -> None:
    # Group commit: the three results ride on the finish's fsync, and the watchdog set at
    # the run's start covers the three attempts (issue 5 counts the synced writes).
    host.serve("w", lambda run, _: [run.step(f"s{i}", lambda i=i: i) for i in range(3)])
    c = host.client("w")
    c.start("1")
    b = host.instance("w", "1").backend
    b.calls.clear()
    host.run_due()
    assert c.status("1").output == [0, 1, 2]
    assert b.calls["exec_durable"] == 1
    assert b.calls["alarm_set"] == 2  # the watchdog at the start, the retention at the end


def test_recorded_results_are_synced_before_any_status_reports_them(host: FakeHost) -> None:
    host.serve("w", lambda run, _: [run.step("a", lambda: "A"),
                                    run.wait_for_event("go", DAY)])
    c = host.client("w")
    c.start("1")
    host.run_due()
    seen = c.status("1")
    assert seen.state == "waiting" and seen.positions == 2
    host.instance("w", "1").backend.power_loss()
    assert c.status("1") == seen
