"""examples/workflows/trip (the README's saga), on the fake host in both modes."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from wkguest.workflow.testing import FakeHost

APP = Path(__file__).parents[3] / "examples" / "workflows" / "trip" / "flow.py"


def trip() -> Any:
    spec = importlib.util.spec_from_file_location("trip_flow", APP)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.trip


def run(host: FakeHost, inp: Any) -> Any:
    host.serve("trips", trip())
    c = host.client("trips")
    c.start("t-1", inp)
    host.run_due()
    host.advance(500)  # the payment's second attempt
    return c.status("t-1")


def steps(host: FakeHost) -> list[tuple[Any, ...]]:
    return host.instance("trips", "t-1").backend.rows(
        "SELECT pos, kind, name FROM _wk_wf_step ORDER BY pos")


def test_a_paid_trip_books_both(any_host: FakeHost) -> None:
    s = run(any_host, {"trip": "lisbon"})
    assert (s.state, s.output) == ("completed", {
        "flight": "flight for lisbon", "hotel": "hotel for lisbon", "paid": "paid lisbon"})


def test_a_declined_card_cancels_the_hotel_then_the_flight(any_host: FakeHost,
                                                           capsys: Any) -> None:
    s = run(any_host, {"trip": "lisbon", "pay_fails": True})
    assert s.state == "failed"
    assert s.error == ("step 'pay' failed after 2 attempt(s): RuntimeError: card declined "
                       "(compensated: 2 compensation(s) ran)")
    assert steps(any_host) == [(0, "G", "all(book flight,book hotel)"), (1, "X", "pay"),
                               (2, "S", "compensate:book hotel"),
                               (3, "S", "compensate:book flight")]
    printed = capsys.readouterr().out.splitlines()
    assert printed == ["flight for lisbon", "hotel for lisbon", "hotel for lisbon cancelled",
                       "flight for lisbon cancelled"]
