"""restart (ops.py) in both replay modes: from the start (a new run id, the same input or
a new one, an empty journal, the events its waits took given back), and from a position
by number or by name and occurrence (the run id and the results before it kept, the
events taken from there given back, the steps from there run again)."""

from __future__ import annotations

from typing import Any

import pytest
from wkguest.workflow import Config, Run, WorkflowError
from wkguest.workflow.testing import FakeHost

DAY = 86_400_000
RAN: list[str] = []


@pytest.fixture(autouse=True)
def _reset() -> None:
    RAN.clear()


def _did(name: str, value: Any) -> Any:
    def f() -> Any:
        RAN.append(name)
        return value
    return f


def rounds(wf: Run, inp: Any) -> Any:
    """`fetch` twice (two occurrences of one name), a wait, then `ship`."""
    a = wf.step("fetch", _did("fetch1", inp))
    b = wf.step("fetch", _did("fetch2", len(RAN)))
    got = wf.wait_for_event("go", DAY)
    return [a, b, got, wf.step("ship", _did("ship", wf.run_id))]


def done(host: FakeHost) -> Any:
    host.serve("w", rounds, Config())
    c = host.client("w")
    c.start("1", "in")
    host.run_due()
    c.send_event("1", "go", "ok")
    host.run_due()
    s = c.status("1")
    assert (s.state, RAN) == ("completed", ["fetch1", "fetch2", "ship"])
    return c, s


def test_restart_from_the_start_runs_everything_again_under_a_new_run_id(
        any_host: FakeHost) -> None:
    c, first = done(any_host)
    s = c.restart("1")
    assert (s.state, s.positions, s.runs, s.previous_run_id) == (
        "running", 0, 2, first.run_id)
    assert s.run_id != first.run_id
    any_host.run_due()
    s = c.status("1")
    # The event its wait took is given back, and taken again by the new run.
    assert (s.state, s.output) == ("completed", ["in", 4, "ok", s.run_id])
    assert RAN == ["fetch1", "fetch2", "ship"] * 2


def test_restart_from_the_start_takes_a_new_input(any_host: FakeHost) -> None:
    c, _ = done(any_host)
    c.restart("1", input="new")
    any_host.run_due()
    assert c.status("1").output[0] == "new"


def test_restart_from_a_named_step_keeps_the_results_before_it(any_host: FakeHost) -> None:
    c, first = done(any_host)
    s = c.restart("1", step="fetch", occurrence=2)
    assert (s.state, s.positions, s.run_id, s.runs) == ("running", 1, first.run_id, 1)
    any_host.run_due()
    s = c.status("1")
    # fetch #1 is the recorded one (so only 3 runs came before fetch #2 ran again); fetch
    # #2 and ship ran again; the event came back.
    assert (s.state, s.output) == ("completed", ["in", 3, "ok", first.run_id])
    assert RAN == ["fetch1", "fetch2", "ship", "fetch2", "ship"]


def test_restart_from_a_position_number(any_host: FakeHost) -> None:
    c, first = done(any_host)
    assert c.restart("1", from_position=3).positions == 3
    any_host.run_due()
    assert c.status("1").output == first.output
    assert RAN == ["fetch1", "fetch2", "ship", "ship"]


def test_restart_refuses_what_it_cannot_do(any_host: FakeHost) -> None:
    c, _ = done(any_host)
    with pytest.raises(WorkflowError, match="has 2 position\\(s\\) named 'fetch', not 3"):
        c.restart("1", step="fetch", occurrence=3)
    with pytest.raises(WorkflowError, match="'from' must be a position from 0 to 4"):
        c.restart("1", from_position=9)
    with pytest.raises(WorkflowError, match="'input' is for a restart from the start"):
        c.restart("1", step="ship", input=1)
    with pytest.raises(WorkflowError, match="'from' or 'step', not both"):
        c.restart("1", step="ship", from_position=1)
    assert c.status("1").state == "completed"  # none of them changed anything


def test_a_pause_is_durable_state(host: FakeHost) -> None:
    """A fresh runner (a restarted host) finds it paused, and runs nothing."""
    host.serve("w", rounds, Config())
    c = host.client("w")
    c.start("1", "in")
    host.run_due()
    c.pause("1")
    host.always_replay = True  # every event from now on: a new runner over the database
    host.instance("w", "1").backend.alarm = host.clock.now()  # a stray alarm, say
    host.run_due()
    assert (c.status("1").state, host.instance("w", "1").backend.alarm) == ("paused", None)
    c.send_event("1", "go", 1)
    c.resume("1")
    host.run_due()
    assert c.status("1").state == "completed"
