"""The binding (wkguest.cloudflare.binding) over the FakeHost, both replay modes: create
with and without an id, on an id that exists, create_batch, get, status in Cloudflare's
names, pause/resume, terminate, restart from the start and from a step, send_event."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from wkguest.cloudflare import (
    InstanceStatus,
    WorkflowEntrypoint,
    WorkflowError,
    WorkflowEvent,
    WorkflowStep,
)
from wkguest.workflow.testing import FakeHost

from .conftest import DAY, MINUTE, Serve, journal

RUNS: list[Any] = []


@pytest.fixture(autouse=True)
def _reset() -> None:
    RUNS.clear()


class Waits(WorkflowEntrypoint):
    """Two sleeps, then a wait for "reviewed"; its output says what it saw."""

    def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        RUNS.append(event.payload)
        step.sleep("first", "1 minute")
        step.sleep("second", 60_000)
        got = step.wait_for_event("review", type="reviewed", timeout="1 day")
        return {"params": event.payload, "got": got.payload, "type": got.type,
                "id": event.instance_id}


def reviewed(any_host: FakeHost, inst: Any, payload: Any = None) -> InstanceStatus:
    any_host.advance(MINUTE)  # each sleep counts from when it is reached
    any_host.advance(MINUTE)
    inst.send_event(type="reviewed", payload=payload)
    any_host.run_due()
    return inst.status()


def test_create_without_an_id_makes_a_uuid_and_the_instance_runs(
        any_host: FakeHost, serve: Serve) -> None:
    flow = serve(Waits)
    inst = flow.create(params={"materialId": "m1"})
    assert str(uuid.UUID(inst.id)) == inst.id
    assert inst.status() == InstanceStatus("queued", None, None, "running")
    any_host.run_due()
    assert inst.status().status == "waiting"
    s = reviewed(any_host, inst, {"ok": True})
    assert s == InstanceStatus("complete", None, {
        "params": {"materialId": "m1"}, "got": {"ok": True}, "type": "reviewed",
        "id": inst.id}, "completed")


def test_create_with_an_id_and_on_an_id_that_exists(any_host: FakeHost, serve: Serve) -> None:
    flow = serve(Waits)
    assert flow.create(id="m1", params=1).id == "m1"
    any_host.run_due()
    with pytest.raises(WorkflowError) as e:
        flow.create(id="m1", params=2)
    assert e.value.kind == "exists" and "'m1'" in str(e.value)
    s = reviewed(any_host, flow.get("m1"))
    assert (s.status, s.output["params"]) == ("complete", 1)  # left as it was
    with pytest.raises(WorkflowError) as e:  # finished and kept: it still exists
        flow.create(id="m1")
    assert e.value.kind == "exists"


def test_create_refuses_an_id_that_is_not_a_str(serve: Serve) -> None:
    with pytest.raises(TypeError, match="id must be a str"):
        serve(Waits).create(id=7)  # type: ignore[arg-type]


def test_create_batch_creates_each_in_order(any_host: FakeHost, serve: Serve) -> None:
    flow = serve(Waits)
    made = flow.create_batch([{"id": "a", "params": 1}, {"params": 2}, {"id": "c"}])
    assert [m.id for m in made[::2]] == ["a", "c"] and uuid.UUID(made[1].id)
    any_host.run_due()
    assert set(map(repr, RUNS)) == {"1", "2", "None"}
    assert {m.status().status for m in made} == {"waiting"}


def test_create_batch_with_a_taken_id_creates_the_others_and_names_it(
        any_host: FakeHost, serve: Serve) -> None:
    flow = serve(Waits)
    flow.create(id="b", params="old")
    with pytest.raises(WorkflowError) as e:
        flow.create_batch([{"id": "a"}, {"id": "b", "params": "new"}, {"id": "c"}])
    assert e.value.kind == "exists" and "'b'" in e.value.message
    assert "1 of 3" in e.value.message
    any_host.run_due()
    assert set(map(repr, RUNS)) == {"'old'", "None"}  # b kept its params: "new" never ran
    assert [flow.get(i).status().status for i in "abc"] == ["waiting"] * 3


@pytest.mark.parametrize(("batch", "error"), [
    ("ab", "must be a list"),
    ({"id": "a"}, "must be a list"),
    ([{"id": "a"}, 3], "entry 1 must be a dict"),
    ([{"id": "a"}, {"ids": "b"}], "entry 1 has unknown key(s) 'ids'"),
    ([{"id": 5}], "entry 0: id must be a str"),
])
def test_a_malformed_batch_creates_nothing(any_host: FakeHost, serve: Serve, batch: Any,
                                           error: str) -> None:
    flow = serve(Waits)
    with pytest.raises((TypeError, ValueError)) as e:
        flow.create_batch(batch)
    assert error in str(e.value)
    assert any_host.instances == {}


def test_get_of_no_instance_is_unknown(serve: Serve) -> None:
    with pytest.raises(WorkflowError) as e:
        serve(Waits).get("nobody")
    assert e.value.kind == "unknown"


def test_pause_and_resume(any_host: FakeHost, serve: Serve) -> None:
    flow = serve(Waits)
    inst = flow.create(id="p")
    any_host.run_due()
    inst.pause()
    assert inst.status() == InstanceStatus("paused", None, None, "paused")
    any_host.advance(MINUTE)
    inst.send_event(type="reviewed", payload="kept")  # recorded while paused
    any_host.advance(DAY)
    assert inst.status().status == "paused"
    inst.resume()
    any_host.run_due()  # the first sleep has passed; the second begins now
    assert inst.status().status == "waiting"
    any_host.advance(MINUTE)
    s = inst.status()
    assert (s.status, s.output["got"]) == ("complete", "kept")


def test_terminate(any_host: FakeHost, serve: Serve) -> None:
    inst = serve(Waits).create(id="t")
    any_host.run_due()
    inst.terminate()
    s = inst.status()
    assert (s.status, s.state) == ("terminated", "terminated")
    any_host.advance(DAY)
    assert inst.status().status == "terminated"


def test_terminate_with_rollback_of_an_instance_with_nothing_to_undo(
        any_host: FakeHost, serve: Serve) -> None:
    inst = serve(Waits).create(id="t")
    any_host.run_due()
    inst.terminate(rollback=True)
    any_host.run_due()
    s = inst.status()
    assert (s.status, s.state) == ("terminated", "cancelled")


def test_restart_from_the_start(any_host: FakeHost, serve: Serve) -> None:
    flow = serve(Waits)
    inst = flow.create(id="r", params="in")
    any_host.run_due()
    assert reviewed(any_host, inst, 1).status == "complete"
    inst.restart()
    assert inst.status().status == "queued"
    any_host.run_due()
    assert [k for _, k, _, _ in journal(any_host, "r")] == ["w"]  # sleeping again at 0
    any_host.advance(MINUTE)
    any_host.advance(MINUTE)
    s = inst.status()
    # the event its wait took is given back: the new run takes it again
    assert (s.status, s.output["params"], s.output["got"]) == ("complete", "in", 1)


def test_restart_from_a_named_step_keeps_what_was_recorded_before_it(
        any_host: FakeHost, serve: Serve) -> None:
    flow = serve(Waits)
    inst = flow.create(id="r")
    any_host.run_due()
    assert reviewed(any_host, inst, 1).status == "complete"
    first = journal(any_host, "r")[0]
    inst.restart(from_step="second")
    any_host.run_due()
    rows = journal(any_host, "r")
    assert rows[0] == first and [r[2] for r in rows] == ["first", "second"]
    assert inst.status().status == "waiting"  # the second sleep, again
    any_host.advance(MINUTE)
    assert inst.status().status == "complete"


class Ticks(WorkflowEntrypoint):
    def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        for _ in range(3):
            step.sleep("tick", "1 minute")
        return "done"


def test_restart_from_a_steps_count(any_host: FakeHost, serve: Serve) -> None:
    inst = serve(Ticks).create(id="r")
    any_host.run_due()
    for _ in range(3):
        any_host.advance(MINUTE)
    assert inst.status().status == "complete"
    inst.restart(from_step={"name": "tick", "count": 3})
    any_host.run_due()
    assert [r[1] for r in journal(any_host, "r")] == ["Z", "Z", "w"]
    any_host.advance(MINUTE)
    assert inst.status() == InstanceStatus("complete", None, "done", "completed")


@pytest.mark.parametrize(("from_step", "error"), [
    (3, "from_step must be a step's name or a dict"),
    ({"name": "tick", "cnt": 2}, "unknown key(s) 'cnt'"),
    ({"count": 2}, "name must be a str"),
    ({"name": "tick", "count": 0}, "count must be a whole number >= 1"),
    ({"name": "tick", "count": True}, "count must be a whole number >= 1"),
])
def test_restart_from_a_bad_step_is_refused_naming_it(any_host: FakeHost, serve: Serve,
                                                      from_step: Any, error: str) -> None:
    inst = serve(Ticks).create(id="r")
    with pytest.raises((TypeError, ValueError)) as e:
        inst.restart(from_step=from_step)
    assert error in str(e.value)


def test_restart_from_a_step_that_is_not_there_is_the_runners_refusal(
        any_host: FakeHost, serve: Serve) -> None:
    inst = serve(Ticks).create(id="r")
    any_host.run_due()
    with pytest.raises(WorkflowError) as e:
        inst.restart(from_step={"name": "tick", "count": 9})
    assert e.value.kind == "refused"


def test_send_event_before_the_wait_is_taken_by_it(any_host: FakeHost, serve: Serve) -> None:
    inst = serve(Waits).create(id="e")
    any_host.run_due()
    inst.send_event(type="reviewed", payload={"ok": False})  # still sleeping
    inst.send_event(type="other", payload="ignored")
    any_host.advance(MINUTE)
    any_host.advance(MINUTE)
    s = inst.status()
    assert (s.status, s.output["got"], s.output["type"]) == ("complete", {"ok": False},
                                                             "reviewed")
