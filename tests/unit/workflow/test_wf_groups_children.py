"""Child workflows as branches of groups, in both replay modes: children run together and
come back in the order given, a race of a child against a timer cancels the losing child
(or leaves it, by `losers`), and a failed child ends an `all` with its ChildFailed."""

from __future__ import annotations

from typing import Any

import pytest
from wkguest.workflow import Config, Run
from wkguest.workflow.children.calls import ChildFailed
from wkguest.workflow.groups.branches import Child, Sleep, Wait
from wkguest.workflow.testing import FakeHost

DAY = 86_400_000


def waits_for_go(wf: Run, inp: Any) -> Any:
    return {"kid": inp, "go": wf.wait_for_event("go", DAY)}


def doubles(wf: Run, inp: Any) -> Any:
    return wf.step("double", lambda: inp * 2)


def fails(wf: Run, inp: Any) -> Any:
    wf.fail(f"kid {inp} gives up")


def serve(host: FakeHost, parent: Any) -> Any:
    host.serve("slow", waits_for_go)
    host.serve("fast", doubles)
    host.serve("bad", fails)
    host.serve("parent", parent, Config(attempts=2, backoff_ms=100))
    c = host.client("parent")
    c.start("p", None)
    host.run_due()
    return c


def test_children_of_two_classes_run_together_and_come_back_in_order(
        any_host: FakeHost) -> None:
    c = serve(any_host, lambda wf, _: wf.all([Child("slow", "s1", 1), Child("fast", "f1", 21)]))
    assert c.status("p").state == "waiting"  # 'fast' is done; 'slow' waits for go
    any_host.client("slow").send_event("s1", "go", "now")
    any_host.run_due()
    s = c.status("p")
    assert (s.state, s.output) == ("completed", [{"kid": 1, "go": "now"}, 42])


@pytest.mark.parametrize(("losers", "kid_state"), [("cancel", "cancelled"),
                                                   ("leave", "waiting")])
def test_a_timer_beats_a_child_and_the_loser_is_cancelled_or_left(
        any_host: FakeHost, losers: str, kid_state: str) -> None:
    def parent(wf: Run, _: Any) -> Any:
        won = wf.any([Child("slow", "s1", 1), Sleep("deadline", 60_000)], losers=losers)
        return list(won)

    c = serve(any_host, parent)
    any_host.advance(60_000)
    s = c.status("p")
    assert (s.state, s.output) == ("completed", [1, None])
    assert any_host.client("slow").status("s1").state == kid_state


def test_a_child_beats_a_wait(any_host: FakeHost) -> None:
    def parent(wf: Run, _: Any) -> Any:
        return list(wf.any([Wait("abort", DAY), Child("fast", "f1", 5)]))

    c = serve(any_host, parent)
    s = c.status("p")
    assert (s.state, s.output) == ("completed", [1, 10])


def test_a_failed_child_ends_an_all_with_its_failure(any_host: FakeHost) -> None:
    def parent(wf: Run, _: Any) -> Any:
        try:
            wf.all([Child("slow", "s1", 1), Child("bad", "b1", 7)])
        except ChildFailed as e:
            return {"cls": e.cls, "id": e.id, "error": e.error}
        return None

    c = serve(any_host, parent)
    s = c.status("p")
    assert s.state == "completed"
    assert s.output == {"cls": "bad", "id": "b1", "error": "failed: kid 7 gives up"}
    assert any_host.client("slow").status("s1").state == "cancelled"  # abandoned, cancelled
