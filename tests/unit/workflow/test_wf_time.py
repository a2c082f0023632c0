"""Sleeps and waits: absolute wake times recorded once, events queued per name, timeouts."""

from __future__ import annotations

from typing import Any

import pytest
from wkguest.workflow import Run
from wkguest.workflow.testing import FakeHost


def test_sleep_records_its_wake_time_once(any_host: FakeHost) -> None:
    def wf(run: Run, _: Any) -> Any:
        run.sleep("nap", 1000)
        return "up"

    any_host.serve("w", wf)
    c = any_host.client("w")
    c.start("1")
    t0 = any_host.clock.now()
    any_host.run_due()
    assert c.status("1").wake_at == t0 + 1000
    any_host.clock.jump(600)
    c.send_event("1", "noise", None)  # wakes the instance early: the sleep must not restart
    any_host.run_due()
    s = c.status("1")
    assert (s.state, s.wake_at) == ("waiting", t0 + 1000)
    any_host.advance(399)
    assert c.status("1").state == "waiting"
    any_host.advance(1)
    assert c.status("1").output == "up"


def test_sleep_until_and_past_times(host: FakeHost) -> None:
    t0 = host.clock.now()

    def wf(run: Run, _: Any) -> Any:
        run.sleep_until("past", t0 - 5)
        run.sleep("zero", 0)
        run.sleep_until("later", t0 + 250)
        return "ok"

    host.serve("w", wf)
    c = host.client("w")
    c.start("1")
    host.run_due()
    s = c.status("1")
    assert (s.state, s.wake_at, s.positions) == ("waiting", t0 + 250, 3)
    host.advance(250)
    assert c.status("1").output == "ok"


def test_event_sent_before_the_wait_is_taken_at_once(any_host: FakeHost) -> None:
    def wf(run: Run, _: Any) -> Any:
        run.sleep("first", 1000)
        return run.wait_for_event("approved", 5000)

    any_host.serve("w", wf)
    c = any_host.client("w")
    c.start("1")
    any_host.run_due()
    c.send_event("1", "approved", {"by": "ann", "sig": b"\x01"})
    any_host.run_due()
    assert c.status("1").state == "waiting"
    any_host.advance(1000)
    assert c.status("1").output == {"by": "ann", "sig": b"\x01"}


def test_event_sent_after_the_wait_started(any_host: FakeHost) -> None:
    any_host.serve("w", lambda run, _: run.wait_for_event("approved", 5000))
    c = any_host.client("w")
    c.start("1")
    t0 = any_host.clock.now()
    any_host.run_due()
    s = c.status("1")
    assert (s.state, s.wake_at, s.waiting_for) == ("waiting", t0 + 5000, ("approved",))
    any_host.clock.jump(4999)
    c.send_event("1", "approved", "yes")
    any_host.run_due()
    assert c.status("1").output == "yes"


def test_wait_times_out_with_none(any_host: FakeHost) -> None:
    def wf(run: Run, _: Any) -> Any:
        got = run.wait_for_event("approved", 5000)
        return "timed out" if got is None else got

    any_host.serve("w", wf)
    c = any_host.client("w")
    c.start("1")
    any_host.run_due()
    any_host.advance(5000)
    assert c.status("1").output == "timed out"


def test_events_are_a_queue_per_name(any_host: FakeHost) -> None:
    def wf(run: Run, _: Any) -> Any:
        return [run.wait_for_event("vote", 10_000) for _ in range(3)]

    any_host.serve("w", wf)
    c = any_host.client("w")
    c.start("1")
    c.send_event("1", "vote", 1)
    c.send_event("1", "other", "x")
    c.send_event("1", "vote", 2)
    any_host.run_due()
    assert c.status("1").positions == 3  # two taken, the third waits
    c.send_event("1", "vote", 3)
    any_host.run_due()
    assert c.status("1").output == [1, 2, 3]
    row = any_host.call("w", "1", "POST", "/wk-workflow/v1/summary")
    assert row[0] == 200


def test_an_event_after_the_deadline_is_left_for_a_later_wait(host: FakeHost) -> None:
    """A wait takes only events received by its deadline, even if its run comes late."""
    def wf(run: Run, _: Any) -> Any:
        first = run.wait_for_event("e", 1000)
        second = run.wait_for_event("e", 1000)
        return [first, second]

    host.serve("w", wf)
    c = host.client("w")
    c.start("1")
    host.run_due()
    host.clock.jump(1500)  # the instance's alarm is late; the event came after the deadline
    c.send_event("1", "e", "late")
    host.run_due()
    assert c.status("1").output == [None, "late"]


def test_untaken_events_stay_until_the_end(host: FakeHost) -> None:
    host.serve("w", lambda run, _: run.wait_for_event("a", 10_000))
    c = host.client("w")
    c.start("1")
    c.send_event("1", "b", 1)
    c.send_event("1", "a", 2)
    host.run_due()
    assert c.status("1").output == 2
    assert host.instance("w", "1").backend.rows("SELECT name FROM _wk_wf_event") == [("b",)]


@pytest.mark.parametrize("bad", ["1000", None, True])
def test_times_must_be_numbers(host: FakeHost, bad: Any) -> None:
    host.serve("w", lambda run, _: run.try_step("x", lambda: 0) and run.sleep("s", bad))
    c = host.client("w")
    c.start("1")
    host.run_due()
    assert "must be a number of milliseconds" in (c.status("1").error or "")
