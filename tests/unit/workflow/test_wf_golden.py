"""Golden recorded histories (golden/*.json): what a deploy of today's code does to
instances recorded earlier. Regenerate with WK_REGEN_GOLDEN=1 (then review the diff:
a change in these files is a change of the stored format).

- order_completed.json: an instance of `golden_order` recorded up to its last wait, with
  the event it waits for already received. Replayed, it must complete with the right
  output, calling none of its step functions (they raise in replay mode).
- order_reordered.json: an instance recorded by an older version whose first two steps
  came in the other order. Replayed with today's code, it must park as reordered.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from wkguest.workflow import NonRetryable, Run
from wkguest.workflow.testing import FakeHost, export_history, load, replay, seed
from wkguest.workflow.testing import dump as dump_history

GOLDEN = Path(__file__).parent / "golden"
DAY = 86_400_000
LIVE = {"on": False}  # step functions run only while recording


def live(value: Any) -> Any:
    def f(*args: Any) -> Any:
        if not LIVE["on"]:
            raise AssertionError("a recorded step ran again on replay")
        return value(*args) if callable(value) else value
    return f


def declined() -> Any:
    raise NonRetryable("card declined")


def golden_order(run: Run, inp: Any, swapped: bool = False) -> Any:
    first, second = ("hold", "reserve") if swapped else ("reserve", "hold")
    a = run.step(first, live({"item": inp["item"], "qty": 2}))
    b = run.step_keyed(second, live(lambda key: key.split("-")[-1]))
    receipt = run.step("receipt", live(b"\x00\x01%PDF"))
    fees = [run.step("fee", live(i * 10)) for i in range(3)]
    charge = run.try_step("charge", live(declined))
    run.sleep("cool-off", 60_000)
    approval = run.wait_for_event("approved", DAY)
    nudge = run.wait_for_event("nudge", 1000)
    ship = run.wait_for_event("ship", DAY)
    return {"a": a, "b": b, "receipt": receipt, "fees": fees, "charge": charge.error,
            "approval": approval, "nudge": nudge, "ship": ship}


EXPECTED = {"a": {"item": "book", "qty": 2}, "b": "1", "receipt": b"\x00\x01%PDF",
            "fees": [0, 10, 20], "charge": "card declined", "approval": {"by": "ann"},
            "nudge": None, "ship": b"\x00label"}


def record(swapped: bool) -> dict[str, Any]:
    host = FakeHost()
    host.serve("orders", lambda run, inp: golden_order(run, inp, swapped))
    c = host.client("orders")
    LIVE["on"] = True
    try:
        c.start("o1", {"item": "book"})
        host.run_due()
        c.send_event("o1", "approved", {"by": "ann"})
        if swapped:
            return export_history(host.instance("orders", "o1").backend,
                                  "older code: 'hold' before 'reserve'; waiting in cool-off")
        host.advance(60_000)
        host.advance(1000)
        assert c.status("o1").waiting_for == ("ship",)
        c.send_event("o1", "ship", b"\x00label")
        return export_history(host.instance("orders", "o1").backend,
                              "golden_order waiting for 'ship', which has arrived")
    finally:
        LIVE["on"] = False


@pytest.mark.parametrize(("name", "swapped"), [("order_completed", False),
                                               ("order_reordered", True)])
def test_golden_files_match_what_is_recorded_today(name: str, swapped: bool) -> None:
    path = GOLDEN / f"{name}.json"
    doc = record(swapped)
    if os.environ.get("WK_REGEN_GOLDEN"):
        dump_history(doc, path)
    golden = load(path)
    run_id = golden["instance"]["run_id"]
    normalized = _with_run_id(doc, doc["instance"]["run_id"], run_id)
    assert normalized == golden


def _with_run_id(doc: dict[str, Any], old: str, new: str) -> dict[str, Any]:
    import json

    return dict(json.loads(json.dumps(doc).replace(old, new)))


def test_recorded_history_replays_to_the_output() -> None:
    status = replay(golden_order, load(GOLDEN / "order_completed.json"))
    assert status.state == "completed", status.error
    assert status.output == EXPECTED
    assert status.positions == 11


def test_recorded_kinds_cover_every_final_entry() -> None:
    from wkguest.workflow import Config
    from wkguest.workflow.runner import Runner

    runner = Runner(golden_order, Config(), seed(load(GOLDEN / "order_completed.json")))
    runner.on_alarm()
    assert runner.journal is not None
    assert "".join(runner.journal.kinds) == "SSTSSSXZEOF"


def test_history_recorded_in_another_order_parks_as_reordered() -> None:
    status = replay(golden_order, load(GOLDEN / "order_reordered.json"))
    assert status.state == "parked"
    assert status.error is not None
    assert status.error.startswith("the code changed the order of its steps: position 0 was "
                                   "recorded as step 'hold', and the code now reaches step "
                                   "'reserve' there.")
