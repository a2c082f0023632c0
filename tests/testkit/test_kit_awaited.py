"""wf.wait_for_workflow on CPython and, through the switch, in the sandbox (the real
component): tests/guests/kit_awaited.py as "orders" and "invoices", and a plain actor."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from wkguest.workflow import WorkflowError
from wkhost.testkit import Kit, WorkflowClass

REPO = Path(__file__).resolve().parents[2]
GUEST = REPO / "tests" / "guests" / "kit_awaited.py"


@pytest.fixture(scope="module", params=["cpython", pytest.param("sandbox",
                                                                  marks=pytest.mark.e2e)])
def kit(request: pytest.FixtureRequest) -> Iterator[Kit]:
    kit = Kit(sandbox=request.param == "sandbox")
    kit.serve_workflow("orders", GUEST)
    kit.serve_workflow("invoices", GUEST)
    kit.serve("counter", REPO / "examples" / "counter" / "app.py")
    try:
        yield kit
    finally:
        kit.close()


def test_the_waiter_gets_the_output_when_the_other_completes(kit: Kit) -> None:
    order = WorkflowClass(kit, "orders").instance("o1")
    invoice = WorkflowClass(kit, "invoices").instance("i1")
    order.start(7)
    invoice.start({"id": "o1"})
    assert invoice.wait_for_wait("workflow orders/o1").state == "waiting"
    order.send_event("ship", "now")
    assert invoice.wait_for_status("completed").output == {"got": {"order": 7}}


def test_a_failure_or_what_cannot_be_awaited(kit: Kit) -> None:
    order = WorkflowClass(kit, "orders").instance("o2")
    order.start(8)
    order.send_event("ship", "fail")
    order.wait_for_status("failed")
    cases = {"i2": ({"id": "o2"}, ["AwaitedFailed", "failed", "failed: the courier lost it"]),
             "i3": ({"id": "nobody"}, ["AwaitedFailed", "unknown"]),
             "i4": ({"cls": "counter", "id": "c1"}, ["AwaitedFailed", "not a workflow"])}
    for iid, (inp, want) in cases.items():
        invoice = WorkflowClass(kit, "invoices").instance(iid)
        invoice.start(inp)
        got = invoice.wait_for_status("completed").output["failed"]
        assert got[:len(want)] == want, (iid, got)


def test_the_timeout(kit: Kit) -> None:
    WorkflowClass(kit, "orders").instance("o5").start(9)
    invoice = WorkflowClass(kit, "invoices").instance("i5")
    invoice.start({"id": "o5", "timeout": "1 hour"})
    got = invoice.wait_for_status("completed").output["failed"]
    assert got[:2] == ["AwaitTimedOut", "timed out"]


def test_signal_with_start(kit: Kit) -> None:
    """A start that carries an event: the order is created with "ship" delivered, in one
    request; a second such start finds it finished and delivers nothing."""
    order = WorkflowClass(kit, "orders").instance("o6")
    st = order.start(10, event=("ship", "now"))
    assert st.created
    assert order.wait_for_status("completed").output == {"order": 10}
    with pytest.raises(WorkflowError, match="finished"):
        order.start(10, event=("ship", "again"))
