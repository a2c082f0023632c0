"""The golden history golden/history_v3_groups.json: an instance recorded with groups (a
settled wf.all, kind G, and an open wf.any, kind g, with its branches' rows in
`_wk_wf_branch`), which every later runner must replay the same way: no recorded
branch's step run again, the results in the order given, the race's winner as recorded.

Regenerate with WK_REGEN_GOLDEN=1 only for a deliberate change of the stored format (then
review the diff). The randomness (the run id) is seeded while recording, so that today's
runner records the file again byte for byte. The history: `golden_groups` has settled
its fan-out (branch 'slow' after a failed attempt, 'fast' at once) and races 'approved'
against a day's sleep; 'approved' has arrived. Replayed, the race goes to the event and
the workflow completes. Replayed by code whose fan-out has other branches, it stops as
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
from wkguest.workflow.groups import rows as branchstore
from wkguest.workflow.groups.branches import Sleep, Step, Wait
from wkguest.workflow.runner import Runner
from wkguest.workflow.testing import (
    FakeBackend,
    FakeHost,
    export_history,
    insert_rows,
    seed,
    status_of,
)

GOLDEN = Path(__file__).parent / "golden" / "history_v3_groups.json"
DAY = 86_400_000
RECORDING = {"on": False}
ATTEMPTS: dict[str, int] = {}
# The branch rows as a history document keeps them (format version 5's columns: see
# wkguest.workflow.testing.export_history).
BRANCHES = ("SELECT pos, idx, kind, name, result, attempts, error, next_attempt_at, wake_at,"
            " event_seq, updated_at FROM _wk_wf_branch ORDER BY pos, idx")


def live(name: str, value: Any, fails: int = 0) -> Any:
    def f() -> Any:
        if not RECORDING["on"]:
            raise AssertionError(f"recorded branch {name!r} ran again on replay")
        n = ATTEMPTS[name] = ATTEMPTS.get(name, 0) + 1
        if n <= fails:
            raise RuntimeError(f"{name} attempt {n}")
        return value
    return f


def golden_groups(run: Run, inp: Any) -> Any:
    slow, fast = run.all([Step("slow", live("slow", {"n": inp}, fails=1)),
                          Step("fast", live("fast", [inp]))])
    won = run.any([Wait("approved", DAY), Sleep("give up", DAY)])
    return {"slow": slow, "fast": fast, "won": [won.index, won.value]}


def reordered_groups(run: Run, inp: Any) -> Any:
    run.all([Step("fast", live("fast", None)), Step("slow", live("slow", None))])
    return None


def record() -> dict[str, Any]:
    RECORDING["on"] = True
    ATTEMPTS.clear()
    try:
        host = FakeHost()
        host.serve("orders", golden_groups, Config(backoff_ms=1000))
        c = host.client("orders")
        c.start("o-1", 7)
        host.run_due()
        host.advance(1000)
        c.send_event("o-1", "approved", "by ann")
        backend = host.instance("orders", "o-1").backend
        doc = export_history(backend, "fan-out settled, racing 'approved', which has arrived")
        doc["branches"] = _rows(backend)
        return doc
    finally:
        RECORDING["on"] = False


def _rows(backend: FakeBackend) -> list[dict[str, Any]]:
    cur = backend.conn.execute(BRANCHES)
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]


def _golden() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(GOLDEN.read_text(encoding="utf-8"))
    return doc


def _replay(fn: Any) -> tuple[Any, FakeBackend]:
    doc = _golden()
    backend = seed(doc)
    # seed() makes the tables it knows; this one as the first group makes it
    backend.conn.execute(branchstore.TABLE)
    insert_rows(backend, "_wk_wf_branch", doc["branches"])
    runner = Runner(fn, Config(), backend)
    runner.on_alarm()
    return status_of(runner), backend


def test_the_golden_file_is_what_todays_runner_records(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "urandom", random.Random(25).randbytes)
    doc = record()
    if os.environ.get("WK_REGEN_GOLDEN"):
        GOLDEN.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n",
                          encoding="utf-8")
    kept = _golden()
    assert (doc["steps"], doc["events"], doc["branches"]) == (
        kept["steps"], kept["events"], kept["branches"])
    assert {k: doc["instance"][k] for k in kept["instance"]} == kept["instance"]


def test_the_golden_history_holds_a_settled_group_and_an_open_one() -> None:
    doc = _golden()
    assert [(r["pos"], r["kind"], r["name"]) for r in doc["steps"]] == [
        (0, "G", "all(slow,fast)"), (1, "g", "any(approved,give up)")]
    assert json.loads(doc["steps"][0]["result"]) == [None, [["S", {"n": 7}], ["S", [7]]]]
    assert [(r["pos"], r["idx"], r["kind"], r["attempts"]) for r in doc["branches"]] == [
        (0, 0, "S", 2), (0, 1, "S", 1), (1, 0, "q", 0), (1, 1, "w", 0)]


def test_the_recorded_groups_replay_and_the_race_goes_to_the_event() -> None:
    status, backend = _replay(golden_groups)
    assert status.state == "completed", status.error
    assert status.output == {"slow": {"n": 7}, "fast": [7], "won": [0, "by ann"]}
    assert backend.conn.execute("SELECT count(*) FROM _wk_wf_event").fetchone() == (0,)


def test_a_fan_out_with_other_branches_stops_as_reordered() -> None:
    status, _ = _replay(reordered_groups)
    assert status.state == "parked"
    assert status.error is not None and status.error.startswith(
        "the code changed the order of its steps: position 0 was recorded as group "
        "'all(slow,fast)', and the code now reaches group 'all(fast,slow)' there.")
