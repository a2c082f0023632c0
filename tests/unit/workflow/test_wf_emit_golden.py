"""The golden history golden/history_v2_emit.json: an instance recorded with emits (kind
M in the journal, the stream's rows in `_wk_wf_emit`), which every later runner must
replay the same way: no recorded emit appended again, no step run again.

Regenerate with WK_REGEN_GOLDEN=1 only for a deliberate change of the stored format (then
review the diff). The randomness (the run id) is seeded while recording, so that today's
runner records the file again byte for byte. The history: `golden_emit` has emitted
'started' and 'charged' around a step and waits for 'ship', which has arrived. Replayed,
it emits 'shipped' at offset 2 and completes. Replayed by code that calls a step where
'started' was emitted, it stops as reordered, running nothing.
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
from wkguest.workflow.testing import (
    FakeBackend,
    FakeHost,
    export_history,
    insert_rows,
    seed,
    status_of,
)

GOLDEN = Path(__file__).parent / "golden" / "history_v2_emit.json"
DAY = 86_400_000
RECORDING = {"on": False}
STREAM = "SELECT * FROM _wk_wf_emit ORDER BY seq"


def live(value: Any) -> Any:
    def f() -> Any:
        if not RECORDING["on"]:
            raise AssertionError("a recorded step ran again on replay")
        return value
    return f


def golden_emit(run: Run, inp: Any) -> Any:
    run.emit("started", {"order": inp["order"]})
    fee = run.step("fee", live(inp["qty"] * 3))
    run.emit("charged", fee)
    ship = run.wait_for_event("ship", DAY)
    run.emit("shipped", ship)
    return {"fee": fee, "ship": ship}


def reordered_emit(run: Run, inp: Any) -> Any:
    run.step("charge first", live(None))  # where the history holds the emit 'started'
    return golden_emit(run, inp)


def record() -> dict[str, Any]:
    RECORDING["on"] = True
    try:
        host = FakeHost()
        host.serve("orders", golden_emit)
        c = host.client("orders")
        c.start("o-1", {"order": "o-1", "qty": 2})
        host.run_due()
        c.send_event("o-1", "ship", "tomorrow")
        backend = host.instance("orders", "o-1").backend
        doc = export_history(backend, "emitted twice, waiting for 'ship', which has arrived")
        doc["emitted"] = _rows(backend)
        return doc
    finally:
        RECORDING["on"] = False


def _rows(backend: FakeBackend) -> list[dict[str, Any]]:
    cur = backend.conn.execute(STREAM)
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]


def _golden() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(GOLDEN.read_text(encoding="utf-8"))
    return doc


def _replay(fn: Any) -> tuple[Any, FakeBackend, dict[str, Any]]:
    doc = _golden()
    backend = seed(doc)
    backend.conn.execute("DELETE FROM _wk_wf_step")  # put back below, after the trigger's
    insert_rows(backend, "_wk_wf_emit", doc["emitted"])  # as recorded (seed(): the rest)
    # The trigger journalled each of these rows again: the recorded journal is the file's.
    backend.conn.execute("DELETE FROM _wk_wf_step")
    insert_rows(backend, "_wk_wf_step", doc["steps"])
    runner = Runner(fn, Config(), backend)
    runner.on_alarm()
    return status_of(runner), backend, doc


def test_the_golden_file_is_what_todays_runner_records(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "urandom", random.Random(25).randbytes)
    doc = record()
    if os.environ.get("WK_REGEN_GOLDEN"):
        GOLDEN.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n",
                          encoding="utf-8")
    kept = _golden()
    assert (doc["steps"], doc["events"], doc["emitted"]) == (
        kept["steps"], kept["events"], kept["emitted"])
    assert {k: doc["instance"][k] for k in kept["instance"]} == kept["instance"]


def test_the_golden_history_holds_emits_in_the_journal_and_the_stream() -> None:
    doc = _golden()
    assert [(r["pos"], r["kind"], r["name"], r["event_seq"]) for r in doc["steps"]
            if r["kind"] == "M"] == [(0, "M", "started", 0), (2, "M", "charged", 1)]
    assert [(r["seq"], r["name"], r["pos"]) for r in doc["emitted"]] == [
        (0, "started", 0), (1, "charged", 2)]


def test_the_recorded_emits_replay_as_nothing_and_the_new_one_is_appended_once() -> None:
    status, backend, doc = _replay(golden_emit)
    assert status.state == "completed", status.error
    assert status.output == {"fee": 6, "ship": "tomorrow"}
    rows = _rows(backend)
    assert rows[:2] == doc["emitted"]
    assert [(r["seq"], r["name"], r["payload"], r["pos"]) for r in rows[2:]] == [
        (2, "shipped", '"tomorrow"', 4)]


def test_a_step_where_an_emit_was_recorded_stops_as_reordered() -> None:
    status, backend, doc = _replay(reordered_emit)
    assert status.state == "parked"
    assert status.error is not None and status.error.startswith(
        "the code changed the order of its steps: position 0 was recorded as emit "
        "'started', and the code now reaches step 'charge first' there.")
    assert _rows(backend) == doc["emitted"]
