"""Updates, further: a displaced sleep keeps its wake time, a handler that waits holds
the update "taken" until it ends, updates wait out a retrying step, a paused instance
keeps them, a handler registered later is refused until the code reaches it, a removed
handler parks the instance, continue-as-new inside a handler parks it, and the route's
refusals and holds."""

from __future__ import annotations

from typing import Any

import pytest
from wkguest.workflow import Config, Run, WorkflowError
from wkguest.workflow.testing import FakeHost

HOUR = 3_600_000


def napper(wf: Run, inp: Any) -> Any:
    seen: list[Any] = []

    def note(arg: Any) -> Any:
        seen.append(arg)
        if arg == "wait":  # a handler may wait too: the update stays taken meanwhile
            return wf.wait_for_event("go", HOUR)
        if arg == "again":
            wf.continue_as_new(None)
        return len(seen)

    wf.on_update("note", note)
    wf.sleep("nap", HOUR)
    wf.on_update("late", lambda arg: arg)
    wf.step("after", lambda: None)
    return seen


def test_a_displaced_sleep_keeps_its_wake_time(host: FakeHost) -> None:
    host.serve("n", napper, Config())
    c = host.client("n")
    c.start("1")
    host.run_due()
    wake = c.status("1").wake_at
    assert wake is not None
    u = c.update("1", "note", "x")
    host.run_due()
    st = c.status("1")
    assert (c.update_status("1", u.id).value(), st.state, st.wake_at) == (1, "waiting", wake)
    host.advance(HOUR)
    assert c.status("1").output == ["x"]


def test_a_handler_that_waits_keeps_the_update_taken_until_it_ends(host: FakeHost) -> None:
    host.serve("n", napper, Config())
    c = host.client("n")
    c.start("1")
    host.run_due()
    u = c.update("1", "note", "wait")
    host.run_due()
    assert c.update_status("1", u.id).state == "taken"
    assert c.status("1").waiting_for == ("go",)
    v = c.update("1", "note", "queued")  # the handler runs: the next one waits for it
    host.run_due()
    assert c.update_status("1", v.id).state == "accepted"
    c.send_event("1", "go", "now")
    host.run_due()
    assert c.update_status("1", u.id).value() == "now"
    assert c.update_status("1", v.id).value() == 2
    host.advance(HOUR)
    assert c.status("1").output == ["wait", "queued"]


def test_a_handler_registered_later_is_refused_until_the_code_reaches_it(
        host: FakeHost) -> None:
    host.serve("n", napper, Config())
    c = host.client("n")
    c.start("1")
    host.run_due()
    with pytest.raises(WorkflowError) as e:
        c.update("1", "late", 1)
    assert e.value.kind == "no-update" and "registers: note" in e.value.message


def test_continue_as_new_inside_a_handler_parks_the_instance(host: FakeHost) -> None:
    host.serve("n", napper, Config())
    c = host.client("n")
    c.start("1")
    host.run_due()
    c.update("1", "note", "again")
    host.run_due()
    st = c.status("1")
    assert st.state == "parked" and "continue_as_new" in (st.error or "")


def test_a_removed_handler_parks_the_instance_on_replay() -> None:
    host = FakeHost(always_replay=True)
    host.serve("n", napper, Config())
    c = host.client("n")
    c.start("1")
    host.run_due()
    c.update("1", "note", "x")
    host.run_due()

    def changed(wf: Run, inp: Any) -> Any:  # the same code without the handler
        wf.sleep("nap", HOUR)
        return None

    host.serve("n", changed, Config())
    host.advance(HOUR)
    st = c.status("1")
    assert st.state == "parked" and "update 'note'" in (st.error or "")


TRIES: list[int] = []


def retrying(wf: Run, inp: Any) -> Any:
    wf.on_update("ping", lambda arg: "pong")

    def flaky() -> str:
        TRIES.append(1)
        if len(TRIES) < 3:
            raise RuntimeError("not yet")
        return "ok"

    return wf.step("flaky", flaky, attempts=5, backoff_ms=1000)


def test_an_update_waits_out_a_retrying_step(host: FakeHost) -> None:
    TRIES.clear()
    host.serve("r", retrying, Config())
    c = host.client("r")
    c.start("1")
    host.run_due()
    u = c.update("1", "ping")
    host.run_due()
    assert c.update_status("1", u.id).state == "accepted"  # the step's backoff is pending
    for _ in range(5):
        host.advance(10_000)
    assert c.status("1").state == "completed"
    # taken at the position after the step: the function's next primitive was none,
    # so it finished first, and the update failed with it
    assert c.update_status("1", u.id).state == "failed"


def test_a_paused_instance_keeps_updates_until_resumed(host: FakeHost) -> None:
    host.serve("n", napper, Config())
    c = host.client("n")
    c.start("1")
    host.run_due()
    c.pause("1")
    u = c.update("1", "note", "p")
    host.run_due()
    assert c.update_status("1", u.id).state == "accepted"
    c.resume("1")
    host.run_due()
    assert c.update_status("1", u.id).value() == 1


def test_an_update_is_asked_again_by_its_id_alone(host: FakeHost, raw: Any) -> None:
    host.serve("n", napper, Config())
    c = host.client("n")
    c.start("1")
    host.run_due()
    r = raw("n")
    st, ans = r("1", "update", {"name": "note", "arg": 5, "id": "h1", "wait_ms": 1000})
    assert st == 200 and ans["update"]["state"] == "accepted"
    st, ans = r("1", "update", {"id": "h1"})
    assert ans["update"]["state"] == "accepted"
    host.run_due()
    st, ans = r("1", "update", {"id": "h1"})
    assert (st, ans["update"]["state"], ans["update"]["result"]) == (200, "completed", 1)


@pytest.mark.parametrize(("msg", "status", "kind"), [
    ({"name": 7}, 400, "bad-request"),
    ({"name": "note", "id": ""}, 400, "bad-request"),
    ({"name": "note", "id": "x" * 129}, 400, "bad-request"),
    ({"name": "note", "arg": "x" * 2_000_000}, 413, "too-large"),
    ({"id": "nope"}, 404, "unknown-update"),
    ({"name": "nope"}, 404, "no-update"),
])
def test_bad_update_requests_are_refused(host: FakeHost, raw: Any, msg: Any, status: int,
                                         kind: str) -> None:
    host.serve("n", napper, Config())
    host.client("n").start("1")
    host.run_due()
    st, ans = raw("n")("1", "update", msg)
    assert (st, ans["error"]) == (status, kind)


def test_too_many_waiting_updates_are_refused(host: FakeHost, raw: Any) -> None:
    host.serve("n", napper, Config(max_events=2))
    c = host.client("n")
    c.start("1")
    host.run_due()
    c.pause("1")
    c.update("1", "note", 1)
    c.update("1", "note", 2)
    st, ans = raw("n")("1", "update", {"name": "note", "arg": 3})
    assert (st, ans["error"]) == (429, "too-many-updates")


def stepper(wf: Run, inp: Any) -> Any:
    seen: list[Any] = []
    wf.on_update("note", lambda arg: seen.append(arg) or len(seen))
    wf.step("first", lambda: None)
    wf.wait_for_event("go", HOUR)
    return seen


@pytest.mark.parametrize("restart", [{}, {"from_position": 1}])
def test_a_restart_before_an_update_gives_it_back_and_the_run_takes_it_again(
        host: FakeHost, restart: dict[str, Any]) -> None:
    host.serve("s", stepper, Config())
    c = host.client("s")
    c.start("1")
    host.run_due()
    u = c.update("1", "note", "x")
    host.run_due()
    assert c.update_status("1", u.id).position == 1
    c.restart("1", **restart)
    host.run_due()
    again = c.update_status("1", u.id)
    # taken at the first position the new run reaches with it waiting: from the start,
    # before the first step
    at = restart.get("from_position", 0)
    assert (again.state, again.position, again.value()) == ("completed", at, 1)
    c.send_event("1", "go")
    host.run_due()
    assert c.status("1").output == ["x"]


def test_the_instance_keeps_its_newest_ended_updates(host: FakeHost,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from wkguest.workflow.updates import inbox
    monkeypatch.setattr(inbox, "MAX_KEPT", 2)
    host.serve("n", napper, Config())
    c = host.client("n")
    c.start("1")
    host.run_due()
    for i in range(4):
        c.update("1", "note", i, update_id=f"u{i}")
        host.advance(1)
    with pytest.raises(WorkflowError) as e:  # forgotten as the fourth was accepted
        c.update_status("1", "u0")
    assert e.value.status == 404
    assert [c.update_status("1", f"u{i}").value() for i in (1, 2, 3)] == [2, 3, 4]
