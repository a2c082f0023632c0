"""Waiting for another workflow's result (wf.wait_for_workflow), in both replay modes:
notified at its end, never polled; every test runs only the alarms that are due."""

from __future__ import annotations

from typing import Any

from wkguest.workflow import AwaitedFailed, AwaitTimedOut, Run
from wkguest.workflow.testing import FakeHost

DAY = 86_400_000


def order(wf: Run, inp: Any) -> Any:
    """Waits for "ship", then completes with the order's number, or fails if asked."""
    got = wf.wait_for_event("ship", DAY)
    if got == "fail":
        wf.fail("the courier lost it")
    if got == "again":
        wf.continue_as_new(inp + 1)
    return {"order": inp}


def invoice(wf: Run, inp: Any) -> Any:
    try:
        got = wf.wait_for_workflow(inp.get("cls", "orders"), inp["id"], inp.get("t", DAY))
    except AwaitedFailed as e:
        return {"failed": [type(e).__name__, e.state, e.error]}
    return {"got": got, "after": wf.step("after", lambda: "billed")}


def served(host: FakeHost) -> tuple[Any, Any]:
    host.serve("orders", order)
    host.serve("invoices", invoice)
    return host.client("orders"), host.client("invoices")


def test_a_waiter_is_told_when_the_other_finishes(any_host: FakeHost) -> None:
    orders, invoices = served(any_host)
    orders.start("o1", 7)
    invoices.start("i1", {"id": "o1"})
    any_host.run_due()
    assert invoices.status("i1").state == "waiting"
    orders.send_event("o1", "ship", "now")
    any_host.run_due()
    st = invoices.status("i1")
    assert (st.state, st.output) == ("completed", {"got": {"order": 7}, "after": "billed"})


def test_one_finished_already_answers_at_once(any_host: FakeHost) -> None:
    orders, invoices = served(any_host)
    orders.start("o1", 7)
    any_host.run_due()
    orders.send_event("o1", "ship", "now")
    any_host.run_due()
    invoices.start("i1", {"id": "o1"})
    any_host.run_due()
    assert invoices.status("i1").output == {"got": {"order": 7}, "after": "billed"}


def test_a_failure_is_raised_in_the_waiter(any_host: FakeHost) -> None:
    orders, invoices = served(any_host)
    orders.start("o1", 7)
    invoices.start("i1", {"id": "o1"})
    any_host.run_due()
    orders.send_event("o1", "ship", "fail")
    any_host.run_due()
    assert invoices.status("i1").output == {
        "failed": ["AwaitedFailed", "failed", "failed: the courier lost it"]}


def test_a_continue_as_new_is_not_the_end(any_host: FakeHost) -> None:
    orders, invoices = served(any_host)
    orders.start("o1", 7)
    invoices.start("i1", {"id": "o1"})
    any_host.run_due()
    orders.send_event("o1", "ship", "again")
    any_host.run_due()
    assert invoices.status("i1").state == "waiting"
    orders.send_event("o1", "ship", "now")
    any_host.run_due()
    assert invoices.status("i1").output["got"] == {"order": 8}


def test_an_unknown_instance_fails_at_once(any_host: FakeHost) -> None:
    """Never started, or past its retention: the watch answers 404. (A class that is not
    a workflow: tests/testkit/test_kit_awaited.py, in the sandbox.)"""
    _, invoices = served(any_host)
    invoices.start("i1", {"id": "nobody"})
    any_host.run_due()
    out = invoices.status("i1").output
    assert out["failed"][:2] == ["AwaitedFailed", "unknown"], out
    assert "no such workflow instance" in out["failed"][2]
    assert ("orders", "nobody") not in any_host.instances  # the watch left nothing


def test_a_workflow_cannot_wait_for_itself(any_host: FakeHost) -> None:
    orders, invoices = served(any_host)
    invoices.start("i1", {"cls": "invoices", "id": "i1"})
    any_host.run_due()
    st = invoices.status("i1")
    assert st.state == "parked" and "cannot wait for itself" in (st.error or ""), st


def test_the_timeout_raises_and_the_other_runs_on(any_host: FakeHost) -> None:
    orders, invoices = served(any_host)
    orders.start("o1", 7)
    invoices.start("i1", {"id": "o1", "t": 1000})
    any_host.run_due()
    any_host.advance(1000)
    out = invoices.status("i1").output
    assert out["failed"][:2] == ["AwaitTimedOut", "timed out"], out
    assert orders.status("o1").state == "waiting"
    assert AwaitTimedOut.__mro__[1] is AwaitedFailed
