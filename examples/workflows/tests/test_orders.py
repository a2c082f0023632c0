"""The orders workflow (../orders), tested as a user would: on plain CPython by default,
on the real built components with `pytest --wk-sandbox`. The ledger (../ledger) is
served beside it: the steps call it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from wkhost.testkit import Kit, WorkflowClass
from wkhost.testkit.histories import HistoryMismatch, check_history

EXAMPLES = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).resolve().parent / "golden"
ORDER = {"item": "book", "qty": 1, "amount": 1200}


@pytest.fixture
def orders(wk_kit: Kit) -> WorkflowClass:
    wk_kit.serve("ledger", EXAMPLES / "ledger" / "app.py", internal=True)
    return wk_kit.serve_workflow("orders", EXAMPLES / "orders" / "app.py", internal=True)


def ledger_calls(kit: Kit) -> list[str]:
    r = kit.call("ledger", "main", "GET", "/calls")
    return [op for op, _key, _n in json.loads(r.body)["calls"]]


def test_an_order_goes_through_a_trap_and_a_flaky_charge(orders: WorkflowClass) -> None:
    order = orders.instance("order-1")
    order.start({**ORDER, "trap_in_pack": True, "charge_failures": 2})
    order.wait_for_wait("approved")  # the 1 s cool-off and the retries' backoffs pass
    order.send_event("approved", {"by": "ann"})
    status = order.wait_for_status("completed")
    assert status.output["approved_by"] == "ann"
    assert status.output["charge"] == "ch-order-1"
    pack, charge = order.step("pack"), order.step("charge")
    assert [a.outcome for a in pack.history] == ["cut", "returned"]
    assert "SystemExit: the packing robot fell over" in (pack.history[0].error or "")
    assert charge.attempts == 3


def test_an_order_not_approved_in_a_day_releases_its_stock(orders: WorkflowClass) -> None:
    order = orders.instance("order-2")
    order.start(ORDER)
    status = order.wait_for_status("failed")  # the day's wait times out at once
    assert status.error == "not approved in time: the reservation was released"
    assert sorted(ledger_calls(orders.kit)) == ["release", "reserve"]


def test_a_declined_card_fails_the_order_without_calling_the_bank(
        orders: WorkflowClass) -> None:
    order = orders.instance("order-3")
    order.mock_step_error("charge", "card declined", non_retryable=True)
    order.mock_event("approved", {"by": "bob"})
    order.start(ORDER)
    status = order.wait_for_status("failed")
    assert "card declined" in (status.error or "")
    assert "charge" not in ledger_calls(orders.kit)


def test_the_recorded_order_replays_with_this_code() -> None:
    replayed = check_history(EXAMPLES / "orders" / "app.py", GOLDEN / "order-completed.json")
    assert replayed.ended and replayed.output["charge"] == "ch-order-1"


def test_a_reordered_deploy_fails_on_the_recorded_order_naming_the_position() -> None:
    with pytest.raises(HistoryMismatch, match="position 0") as failed:
        check_history(EXAMPLES / "orders" / "app_reordered.py",
                      GOLDEN / "order-completed.json")
    assert "'reserve'" in str(failed.value) and "'charge'" in str(failed.value)
