"""The trips saga (../trip): two bookings at once, then the payment; when the payment
fails for good, the bookings are undone, newest first."""

from __future__ import annotations

from pathlib import Path

import pytest
from wkhost.testkit import Kit, WorkflowClass

EXAMPLES = Path(__file__).resolve().parent.parent


@pytest.fixture
def trips(wk_kit: Kit) -> WorkflowClass:
    return wk_kit.serve_workflow("trips", EXAMPLES / "trip" / "app.py")


def test_a_trip_books_both_and_pays(trips: WorkflowClass) -> None:
    trip = trips.instance("t-1")
    trip.start({"trip": "t-1"})
    assert trip.wait_for_status("completed").output == {
        "flight": "flight for t-1", "hotel": "hotel for t-1", "paid": "paid t-1"}


def test_a_declined_payment_undoes_the_bookings_newest_first(trips: WorkflowClass) -> None:
    trip = trips.instance("t-2")
    trip.start({"trip": "t-2", "pay_fails": True})
    status = trip.wait_for_status("failed")  # the payment's retry backoff passes at once
    assert "card declined" in (status.error or "")
    assert [s.name for s in trip.steps() if s.name.startswith("compensate:")] == [
        "compensate:book hotel", "compensate:book flight"]


def test_one_declined_attempt_is_retried(trips: WorkflowClass) -> None:
    trip = trips.instance("t-3")
    trip.mock_step_error("pay", "card declined", times=1)
    trip.start({"trip": "t-3"})
    assert trip.wait_for_status("completed").output["paid"] == "paid t-3"
    assert [a.outcome for a in trip.step("pay").history] == ["failed", "returned"]
