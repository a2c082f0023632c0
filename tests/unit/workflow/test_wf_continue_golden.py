"""The golden history golden/history_v3_continue.json: an instance recorded in the third
run of a chain of continue-as-new (its `_wk_wf_run` row: runs 3 and the previous run's
id), with an event received before both switches still pending, and the emitted stream
(`_wk_wf_emit`) holding one event of each run. Every later runner must replay it the
same way: the journal is the current run's alone, no recorded step runs again, no
recorded emit is appended again, the stream's offsets go on from the older runs'.

Regenerate with WK_REGEN_GOLDEN=1 only for a deliberate change of the stored format (then
review the diff). The randomness (the run ids) is seeded while recording, so that today's
runner records the file again byte for byte. The history: `golden_continue` takes one
'item' per run and adds it to the total its input carries, then rests a second; the
first two runs continue as new. Four items arrived before the first run. Run 3 has
emitted its round, taken the third item, added it, and its rest is over. Replayed, it
takes the fourth item, pending since before the first switch, emits the total at offset
3 and completes. Replayed by code whose step no longer names its round, it stops as
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
from wkguest.workflow.testing import (
    FakeBackend,
    FakeHost,
    export_history,
    insert_rows,
    seed,
    status_of,
)

GOLDEN = Path(__file__).parent / "golden" / "history_v3_continue.json"
DAY = 86_400_000
RECORDING = {"on": False}
STREAM = "SELECT * FROM _wk_wf_emit ORDER BY seq"
CHAIN = "SELECT * FROM _wk_wf_run"


def live(name: str, value: Any) -> Any:
    def f() -> Any:
        if not RECORDING["on"]:
            raise AssertionError(f"recorded step {name!r} ran again on replay")
        return value
    return f


def golden_continue(run: Run, inp: Any) -> Any:
    r, total = inp["round"], inp["total"]
    run.emit("round", r)
    item = run.wait_for_event("item", DAY)
    total = run.step(f"add {r}", live(f"add {r}", total + item))
    run.sleep("rest", 1000)
    if r < 2:
        run.continue_as_new({"round": r + 1, "total": total})
    last = run.wait_for_event("item", DAY)
    run.emit("total", total + last)
    return {"total": total + last, "round": r}


def reordered_continue(run: Run, inp: Any) -> Any:
    run.emit("round", inp["round"])
    item = run.wait_for_event("item", DAY)
    run.step("add", live("add", inp["total"] + item))  # recorded as 'add 2'
    return None


def record() -> dict[str, Any]:
    RECORDING["on"] = True
    try:
        host = FakeHost()
        host.serve("sums", golden_continue)
        c = host.client("sums")
        c.start("s-1", {"round": 0, "total": 0})
        for item in (1, 2, 3, 4):  # all before the first run: pending across the switches
            c.send_event("s-1", "item", item)
        host.run_due()
        host.advance(1000)  # run 1's rest is over: it continues; run 2 rests
        host.advance(1000)  # run 2 continues; run 3 rests
        host.clock.jump(1000)  # run 3's rest is over, its alarm not yet fired
        backend = host.instance("sums", "s-1").backend
        doc = export_history(backend, "run 3 of 3, its rest over, the fourth item pending")
        doc["runs"] = _rows(backend, CHAIN)
        doc["emitted"] = _rows(backend, STREAM)
        return doc
    finally:
        RECORDING["on"] = False


def _rows(backend: FakeBackend, sql: str) -> list[dict[str, Any]]:
    cur = backend.conn.execute(sql)
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]


def _golden() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(GOLDEN.read_text(encoding="utf-8"))
    return doc


def _replay(fn: Any) -> tuple[Any, FakeBackend, dict[str, Any]]:
    doc = _golden()
    backend = seed(doc)  # its schema has the chain's table and the stream's
    insert_rows(backend, "_wk_wf_run", doc["runs"])
    # The stream's trigger journals each row again, the older runs' too, each at its
    # position 0: the journal is cleared around each, and the recorded one (the current
    # run's alone) put back after.
    for row in doc["emitted"]:
        backend.conn.execute("DELETE FROM _wk_wf_step")
        insert_rows(backend, "_wk_wf_emit", [row])
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
    assert (doc["steps"], doc["events"], doc["runs"], doc["emitted"]) == (
        kept["steps"], kept["events"], kept["runs"], kept["emitted"])
    assert {k: doc["instance"][k] for k in kept["instance"]} == kept["instance"]


def test_the_golden_history_is_a_third_run_with_the_older_runs_stream_and_event() -> None:
    doc = _golden()
    assert [(r["pos"], r["kind"], r["name"]) for r in doc["steps"]] == [
        (0, "M", "round"), (1, "E", "item"), (2, "S", "add 2"), (3, "w", "rest")]
    assert doc["steps"][3]["wake_at"] == doc["now"]  # the rest is over
    assert json.loads(doc["instance"]["input"]) == {"round": 2, "total": 3}
    assert [(r["runs"], r["previous_run_id"]) for r in doc["runs"]] == [
        (3, doc["emitted"][1]["run_id"])]
    assert [(r["seq"], r["payload"], r["pos"]) for r in doc["emitted"]] == [
        (0, "0", 0), (1, "1", 0), (2, "2", 0)]
    run_ids = [r["run_id"] for r in doc["emitted"]]
    assert len(set(run_ids)) == 3 and run_ids[-1] == doc["instance"]["run_id"]
    # The fourth item arrived before the first switch, and is pending still.
    assert [(e["seq"], e["name"], e["payload"]) for e in doc["events"]] == [(4, "item", "4")]
    assert doc["events"][0]["received_at"] < doc["emitted"][1]["at"]


def test_the_recorded_third_run_replays_takes_the_older_event_and_completes() -> None:
    status, backend, doc = _replay(golden_continue)
    assert status.state == "completed", status.error
    assert status.output == {"total": 10, "round": 2}
    assert (status.runs, status.previous_run_id, status.run_id) == (
        3, doc["runs"][0]["previous_run_id"], doc["instance"]["run_id"])
    assert backend.conn.execute("SELECT count(*) FROM _wk_wf_event").fetchone() == (0,)
    rows = _rows(backend, STREAM)
    assert rows[:3] == doc["emitted"]  # no recorded emit appended again
    assert [(r["seq"], r["name"], r["payload"], r["run_id"], r["pos"]) for r in rows[3:]] == [
        (3, "total", "10", doc["instance"]["run_id"], 5)]
    assert _rows(backend, CHAIN) == doc["runs"]


def test_a_step_that_no_longer_names_its_round_stops_as_reordered() -> None:
    status, backend, doc = _replay(reordered_continue)
    assert status.state == "parked"
    assert status.error is not None and status.error.startswith(
        "the code changed the order of its steps: position 2 was recorded as step "
        "'add 2', and the code now reaches step 'add' there.")
    assert (status.runs, status.run_id) == (3, doc["instance"]["run_id"])
    assert _rows(backend, STREAM) == doc["emitted"]
    assert backend.conn.execute("SELECT seq FROM _wk_wf_event").fetchall() == [(4,)]
    assert _rows(backend, CHAIN) == doc["runs"]
