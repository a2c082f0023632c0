"""The golden history golden/history_v2_helpers.json: instances recorded with the kinds of
issue 25's deterministic helpers and versioning (N, R, U and the patch marker V), which
every later runner must replay the same way: the recorded values back, no step run again.

Regenerate with WK_REGEN_GOLDEN=1 only for a deliberate change of the stored format (then
review the diff). The randomness is seeded while recording (os.urandom), so that today's
runner records the file again byte for byte. Its histories:

- completes: recorded by `golden_v2` (the change 'fee-v2' in), waiting for 'ship', which
  has arrived. Replayed, it completes with the recorded time, number and UUID, the new
  fee, and a new now() at the replay's time.
- predates: recorded by the code before the change (no patched() call), at the same
  point. Replayed by `golden_v2`, patched() answers False and the old fee replays.

And `completes` replayed by code that calls a step where now() was recorded must stop as
reordered, running nothing.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

import pytest
from wkguest.workflow import Config, Run
from wkguest.workflow.runner import Runner
from wkguest.workflow.testing import FakeHost, export_history, seed, status_of

GOLDEN = Path(__file__).parent / "golden" / "history_v2_helpers.json"
DAY = 86_400_000
RECORDING = {"on": False, "patch": True}  # step functions run only while recording
KINDS = ("N", "R", "U", "V")


def live(value: Any) -> Any:
    def f() -> Any:
        if not RECORDING["on"]:
            raise AssertionError("a recorded step ran again on replay")
        return value
    return f


def golden_v2(run: Run, inp: Any) -> Any:
    t, r, u = run.now(), run.random(), run.uuid()
    if RECORDING["patch"] and run.patched("fee-v2"):
        fee = run.step("new fee", live({"fee": inp["qty"] * 3}))
    else:
        fee = run.step("old fee", live({"fee": inp["qty"] * 5}))
    run.sleep("cool-off", 60_000)
    ship = run.wait_for_event("ship", DAY)
    return {"t": t, "r": r, "u": u, "fee": fee, "ship": ship, "later": run.now()}


def reordered_v2(run: Run, inp: Any) -> Any:
    run.step("charge first", live(None))  # where the history holds now()
    return golden_v2(run, inp)


def record() -> dict[str, Any]:
    """Record both histories with today's runner, as the module docstring says."""
    RECORDING["on"] = True
    try:
        host = FakeHost()
        host.serve("orders", golden_v2)
        c = host.client("orders")
        out: dict[str, Any] = {}
        for name, patch in (("completes", True), ("predates", False)):
            RECORDING["patch"] = patch
            c.start(name, {"qty": 2})
            host.run_due()
            host.advance(60_000)
            c.send_event(name, "ship", "now")
            out[name] = export_history(host.instance("orders", name).backend,
                                       "waiting for 'ship', which has arrived")
        return out
    finally:
        RECORDING.update(on=False, patch=True)


def _seeded_urandom() -> Any:
    rng = random.Random(25)
    return rng.randbytes


def _golden() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(GOLDEN.read_text(encoding="utf-8"))
    return doc


def _replay(name: str, fn: Any = golden_v2) -> tuple[Any, dict[str, Any]]:
    doc = _golden()["histories"][name]
    runner = Runner(fn, Config(), seed(doc))
    runner.on_alarm()
    return status_of(runner), doc


def _recorded(doc: dict[str, Any], kind: str) -> Any:
    (row,) = [r for r in doc["steps"] if r["kind"] == kind]
    return json.loads(row["result"])


def test_the_golden_file_is_what_todays_runner_records(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "urandom", _seeded_urandom())
    doc = {"note": "wk-workflow histories of golden_v2: the deterministic helpers and a "
                   "patch (tests/unit/workflow/test_wf_deterministic_golden.py)",
           "histories": record()}
    if os.environ.get("WK_REGEN_GOLDEN"):
        GOLDEN.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n",
                          encoding="utf-8")
    golden = _golden()["histories"]
    for name, history in doc["histories"].items():
        kept = golden[name]
        # The journal and events whole; the instance's row on the columns the file has
        # (a column added to _wk_wf later is not this file's concern).
        assert (history["steps"], history["events"]) == (kept["steps"], kept["events"]), name
        assert {k: history["instance"][k] for k in kept["instance"]} == kept["instance"]


def test_the_golden_history_holds_the_new_kinds() -> None:
    histories = _golden()["histories"]
    kinds = {row["kind"] for h in histories.values() for row in h["steps"]}
    assert set(KINDS) <= kinds
    assert "V" not in {row["kind"] for row in histories["predates"]["steps"]}


def test_the_recorded_values_come_back_and_the_new_fee_is_kept() -> None:
    status, doc = _replay("completes")
    assert status.state == "completed", status.error
    assert status.output == {"t": _recorded(doc, "N"), "r": _recorded(doc, "R"),
                             "u": _recorded(doc, "U"), "fee": {"fee": 6}, "ship": "now",
                             "later": doc["now"]}
    assert status.output["t"] < doc["now"]  # the time recorded, not the replay's


def test_a_history_that_predates_the_change_keeps_the_old_branch() -> None:
    status, doc = _replay("predates")
    assert status.state == "completed", status.error
    assert status.output["fee"] == {"fee": 10}
    assert status.output["u"] == _recorded(doc, "U")


def test_a_step_where_now_was_recorded_stops_as_reordered() -> None:
    status, _ = _replay("completes", reordered_v2)
    assert status.state not in ("running", "waiting", "completed")
    assert status.error is not None and status.error.startswith(
        "the code changed the order of its steps: position 0 was recorded as wf.now(), "
        "and the code now reaches step 'charge first' there.")
