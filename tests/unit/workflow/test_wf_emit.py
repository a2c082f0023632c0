"""wf.emit(name, payload): the instance's durable event stream, read from an offset.

Both replay modes (a warm cache, a fresh runner every event): a recorded emit replays as
nothing, so the stream never holds one twice.
"""

from __future__ import annotations

from typing import Any

import pytest
from wkguest.workflow import Config, Event, Run, WorkflowError
from wkguest.workflow.protocol import Protocol
from wkguest.workflow.runner import Runner
from wkguest.workflow.testing import FakeHost

DAY = 86_400_000


def three_events(wf: Run, inp: Any) -> Any:
    wf.emit("started", {"n": inp})
    n = wf.step("double", lambda: inp * 2)
    wf.emit("doubled", n)
    wf.sleep("a while", 60_000)
    wf.emit("woke", b"\x00raw")
    got = wf.wait_for_event("go", DAY)
    return {"n": n, "go": got}


def started(host: FakeHost, fn: Any = three_events, inp: Any = 21, id: str = "a") -> Any:
    host.serve("c", fn, Config())
    c = host.client("c")
    c.start(id, inp)
    host.run_due()
    return c


def test_each_emit_is_appended_once_with_its_offset_name_payload_time_and_position(
        any_host: FakeHost) -> None:
    c = started(any_host)
    t0 = any_host.clock.now()
    assert [(e.offset, e.name, e.payload, e.pos, e.at) for e in c.events("a")] == [
        (0, "started", {"n": 21}, 0, t0), (1, "doubled", 42, 2, t0)]
    any_host.advance(60_000)  # the sleep passes: the function replays both emits
    c.send_event("a", "go", "now")
    any_host.run_due()
    assert c.status("a").output == {"n": 42, "go": "now"}
    events = c.events("a")
    assert [(e.offset, e.name, e.pos) for e in events] == [
        (0, "started", 0), (1, "doubled", 2), (2, "woke", 4)]
    assert events[2].payload == b"\x00raw" and events[2].at == t0 + 60_000
    assert {e.run_id for e in events} == {c.status("a").run_id}


def test_reading_after_n_skips_the_first_n_and_pages(any_host: FakeHost) -> None:
    def many(wf: Run, inp: Any) -> None:
        for i in range(7):
            wf.emit(f"e{i}", i)

    c = started(any_host, many)
    assert [e.offset for e in c.events("a", after=4)] == [4, 5, 6]
    assert c.events("a", after=7) == [] and c.events("a", after=99) == []
    assert [e.payload for e in c.events("a", after=1, limit=2)] == [1, 2]


def test_the_events_route_says_where_to_go_on(host: FakeHost, raw: Any) -> None:
    def many(wf: Run, inp: Any) -> None:
        for i in range(3):
            wf.emit("tick", i)

    started(host, many)
    status, page = raw("c")("a", "events", {"after": 1, "limit": 1}, method="GET")
    assert status == 200 and (page["next"], page["more"]) == (2, True)
    assert [e["offset"] for e in page["events"]] == [1]
    status, page = raw("c")("a", "events", {"after": 2}, sender="operator")
    assert (page["next"], page["more"], len(page["events"])) == (3, False, 1)
    assert raw("c")("a", "events", {"after": -1})[0] == 400


def test_emits_are_not_synced_one_by_one(host: FakeHost) -> None:
    """A run's emits ride on its last write's fsync, as the helpers' values do."""
    def emits(n: int) -> Any:
        def fn(wf: Run, inp: Any) -> None:
            for i in range(n):
                wf.emit("tick", i)
        return fn

    syncs = []
    for n in (1, 20):
        h = FakeHost()
        h.serve("c", emits(n))
        h.client("c").start("a")
        b = h.instance("c", "a").backend
        before = b.calls["exec_durable"]
        h.run_due()
        assert h.client("c").status("a").state == "completed"
        syncs.append(b.calls["exec_durable"] - before)
    assert syncs[0] == syncs[1] == 1  # the finish's own


def test_a_reported_stream_survives_a_power_loss_and_is_never_doubled(
        any_host: FakeHost) -> None:
    """The run's last write synced its emits: what a read reported stays, once."""
    def fn(wf: Run, inp: Any) -> None:
        wf.emit("hello", 1)
        wf.wait_for_event("go", DAY)

    c = started(any_host, fn)
    seen = c.events("a")
    any_host.instance("c", "a").backend.power_loss()
    assert c.events("a") == seen
    c.send_event("a", "go")
    any_host.run_due()
    assert c.status("a").state == "completed"
    assert [(e.offset, e.name) for e in c.events("a")] == [(0, "hello")]


def test_a_recorded_emit_reached_by_a_step_stops_as_reordered(host: FakeHost) -> None:
    calls: list[str] = []

    def v1(wf: Run, inp: Any) -> None:
        wf.emit("first", None)
        wf.wait_for_event("go", DAY)

    def v2(wf: Run, inp: Any) -> None:
        wf.step("charge", lambda: calls.append("charge"))
        wf.wait_for_event("go", DAY)

    c = started(host, v1)
    host.serve("c", v2, Config())
    host.instances[("c", "a")].runner.fn = v2
    c.send_event("a", "go")
    host.run_due()
    s = c.status("a")
    assert s.state == "parked" and calls == []
    assert s.error is not None and ("position 0 was recorded as emit 'first', and the code "
                                    "now reaches step 'charge' there") in s.error


def test_a_payload_that_cannot_be_recorded_parks_naming_the_emit(host: FakeHost) -> None:
    c = started(host, lambda wf, inp: wf.emit("bad", {1, 2}))
    s = c.status("a")
    assert s.state == "parked" and s.error is not None and "wf.emit('bad')" in s.error
    assert c.events("a") == []


def test_an_instance_made_before_the_stream_existed_gets_it_at_its_first_emit(
        host: FakeHost) -> None:
    def fn(wf: Run, inp: Any) -> None:
        wf.wait_for_event("go", DAY)
        wf.emit("late", inp)

    c = started(host, fn, inp="x")
    inst = host.instance("c", "a")
    inst.backend.conn.execute("DROP TABLE _wk_wf_emit")  # as an older SDK made it
    # ... served now by this SDK, in a component instance that did not make the tables
    inst.runner = Runner(fn, Config(), inst.backend)
    inst.protocol = Protocol(inst.runner)
    assert c.events("a") == []
    c.send_event("a", "go")
    host.run_due()
    assert c.status("a").state == "completed"
    assert c.events("a") == [Event(0, "late", "x", host.clock.now(), 1, c.status("a").run_id)]


def test_an_emit_inside_a_steps_function_is_refused(host: FakeHost) -> None:
    def fn(wf: Run, inp: Any) -> Any:
        return wf.try_step("s", lambda: wf.emit("inside", 1), attempts=1).error

    c = started(host, fn)
    assert c.status("a").output == "workflow primitives cannot be called inside a step's function"
    assert c.events("a") == []


def test_events_of_an_unknown_id_leave_nothing_behind(host: FakeHost) -> None:
    host.serve("c", three_events)
    with pytest.raises(WorkflowError) as e:
        host.client("c").events("nobody")
    assert e.value.kind == "unknown"
    assert ("c", "nobody") not in host.instances
