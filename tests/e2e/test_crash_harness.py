"""The crash-point harness over the examples, as a user runs it: `wkhost test crash-points`
on the built orders and ledger components, the `wk_crash_points` fixture on the trip
saga's source, and the example's step that is not idempotent on purpose, failed through
its differing output. Each boundary is a real `wkhost serve` killed with SIGKILL there
and restarted on its data."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from wkhost.testkit import Report

from . import workflow_support
from .server import REPO

workflow_wasm = workflow_support.workflow_wasm  # the fixture, by name

EXAMPLES = REPO / "examples" / "workflows"
APPROVE = [{"event": "approved", "payload": {"by": "ann"}}]
# The pack traps once, the charge is refused once: boundaries inside retries and traps.
ORDER = {"item": "book", "qty": 1, "amount": 1200, "cool_off_ms": 1000,
         "trap_in_pack": True, "charge_failures": 1}


def crash_points(wasm: dict[str, Path], tmp_path: Path, *args: str
                 ) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "approve.json"
    script.write_text(json.dumps(APPROVE))
    return subprocess.run(
        [sys.executable, "-m", "wkhost.cli", "test", "crash-points",
         f"orders={wasm['orders']}", "--actor", f"ledger={wasm['ledger']}",
         "--access", "ledger=internal", "--events", str(script), "--jobs", "1", "--json",
         *args], capture_output=True, text=True, timeout=600, cwd=tmp_path)


def test_the_orders_example_survives_a_kill_at_every_boundary(
        workflow_wasm: dict[str, Path], tmp_path: Path) -> None:
    proc = crash_points(workflow_wasm, tmp_path, "--input", json.dumps(ORDER))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    doc = json.loads(proc.stdout)
    assert doc["ok"] and doc["failed"] == 0
    assert doc["clean"]["state"] == "completed"
    assert doc["clean"]["runs"] == {"0 reserve": 1, "1 pack": 2, "4 charge": 2, "5 notify": 1}
    runs = doc["runs"]
    points = {r["point"] for r in runs}
    assert points == {"sql-after:wk:attempt", "sql-before:wk:result", "sql-after:wk:result",
                      "sql-after:wk:sleep", "sql-after:wk:sleep-done", "sql-after:wk:wait",
                      "sql-after:wk:take-event", "sql-after:wk:finish"}, points
    # One run per hit: each of the five attempts, each of the four results.
    assert sum(r["point"] == "sql-after:wk:attempt" for r in runs) == 6
    assert all(r["killed"] and r["state"] == "completed" for r in runs)
    assert all(r["output"] == doc["clean"]["output"] for r in runs)
    # A kill between a function's return and its record runs it once more, and only it.
    before = [r for r in runs if r["point"] == "sql-before:wk:result"]
    assert [r["at_least_once"] for r in before] == ["0 reserve", "1 pack", "4 charge",
                                                    "5 notify"]
    after = [r for r in runs if r["point"] == "sql-after:wk:result"]
    assert all(r["at_least_once"] is None and r["runs"] == doc["clean"]["runs"]
               for r in after)
    # Progress, one line a boundary, on stderr.
    assert f"[{len(runs)}/{len(runs)}] ok" in proc.stderr


def test_a_step_that_is_not_idempotent_fails_by_its_output(
        workflow_wasm: dict[str, Path], tmp_path: Path) -> None:
    inp = {"item": "book", "qty": 1, "amount": 1200, "cool_off_ms": 0, "number_invoice": True}
    proc = crash_points(workflow_wasm, tmp_path, "--input", json.dumps(inp),
                        "--only", "sql-before:wk:result")
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    doc = json.loads(proc.stdout)
    assert doc["clean"]["output"]["invoice"] == 1
    failed = [r for r in doc["runs"] if not r["ok"]]
    assert [r["at"] for r in failed] == ["position 5 'invoice' (in flight)"], failed
    assert failed[0]["problems"] == [
        'its output differs: "invoice": 2 (clean run: 1)']
    assert failed[0]["runs"]["5 invoice"] == 2  # the run itself was allowed: at-least-once
    assert sum(r["ok"] for r in doc["runs"]) == 3  # reserve, charge, notify: keyed


def test_the_fixture_over_the_trip_sagas_source(
        wk_crash_points: Callable[..., Report]) -> None:
    report = wk_crash_points("trips", EXAMPLES / "trip" / "app.py", {"trip": "t-1"})
    assert report.ok, report.text()
    assert report.clean.output == {"flight": "flight for t-1", "hotel": "hotel for t-1",
                                   "paid": "paid t-1"}
    points = [r.boundary.point for r in report.runs if r.boundary]
    for point in ("sql-after:wk:group-open", "sql-after:wk:branch", "sql-after:wk:group",
                  "sql-after:wk:finish"):
        assert point in points, points
    # Both branches' functions ran once more, each when the kill fell inside it.
    again: list[Any] = [r.at_least_once.text() for r in report.runs if r.at_least_once]
    assert "0.0 book flight" in again and "0.1 book hotel" in again, again
