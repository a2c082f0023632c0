"""Continue-as-new through `wkhost serve`: a workflow of 3 runs of 5 steps continues as
new twice and completes; the status shows its runs and the previous run's id; an event
sent during the first run is taken by the last; the emitted stream keeps every run's
events. And a kill -9 at each statement of the switch (guest_sdk/wkguest/workflow/
core/continuation.py, crash points of host/testing/crashpoints.py) leaves the old run whole or the
new run alone, and after a restart the instance completes with the right output and no
step's effect repeated.

The guest is tests/guests/wf_continue.py: each run's steps are tx steps that insert
(run, i) into the instance's own table `effects`, in one transaction with the step's
recorded result, so a step that ran again would show as a second row.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from . import reliability_support
from .reliability_support import Host, HostDown, Launch, class_db, table_names
from .server import REPO

pytestmark = pytest.mark.e2e

launch = reliability_support.launch  # the fixture, by name

CLS, OID = "chain", "c1"
RUNS, STEPS = 3, 5
INPUT = {"runs": RUNS, "steps": STEPS}
NOTE = {"by": "ann"}
COUNTS = [[r, i, 1] for r in range(1, RUNS + 1) for i in range(STEPS)]
OUTPUT = {"runs": RUNS, "note": NOTE, "counts": COUNTS}
# A run that continues: its steps, the emit "run", the sleep "rest".
RUN_NAMES = [f"effect {i}" for i in range(STEPS)] + ["run", "rest"]

# Each statement of the switch (core/continuation.py), before and after it runs, at the first
# switch; a skip of 1 is the same point at the second.
TAGS = ["wk:can-begin", "wk:can-table", "wk:can-chain", "wk:can-clear", "wk:can-run",
        "wk:can-commit"]
POINTS = ([(f"sql-{when}:{tag}", 0) for tag in TAGS for when in ("before", "after")]
          + [(f"sql-{when}:{tag}", 1) for tag in ("wk:can-clear", "wk:can-commit")
             for when in ("before", "after")])


@pytest.fixture(scope="module")
def continue_wasm(build_guest: Callable[[str], Path]) -> Path:
    return build_guest("wf_continue")


@dataclass
class Left:
    """What a data directory holds for the instance (read from a copy)."""

    integrity: str
    alarm_at: int | None
    wf: dict[str, Any]
    chain: tuple[int, str] | None  # _wk_wf_run's (runs, previous_run_id)
    journal: list[str]  # the positions' names
    pending: list[str]  # the events no wait has taken
    effects: dict[tuple[int, int], int]  # (run, i) -> rows
    emitted: list[tuple[int, str, Any]]  # (offset, run_id, payload)


def read_db(data: Path) -> Left:
    with class_db(data, CLS, row=True) as conn:
        return _read(conn)


def _read(conn: sqlite3.Connection) -> Left:
    tables = table_names(conn)
    alarm = conn.execute("SELECT at_ms FROM _wk_host_alarm").fetchone()
    chain = conn.execute("SELECT runs, previous_run_id FROM _wk_wf_run").fetchone()
    effects = ({(r, i): n for r, i, n in conn.execute(
        "SELECT run, i, count(*) FROM effects GROUP BY run, i")} if "effects" in tables else {})
    return Left(
        conn.execute("PRAGMA integrity_check").fetchone()[0],
        alarm[0] if alarm else None,
        dict(conn.execute("SELECT * FROM _wk_wf").fetchone()),
        tuple(chain) if chain else None,
        [n for (n,) in conn.execute("SELECT name FROM _wk_wf_step ORDER BY pos")],
        [n for (n,) in conn.execute("SELECT name FROM _wk_wf_event ORDER BY seq")],
        effects,
        [(s, r, json.loads(p)) for s, r, p in conn.execute(
            "SELECT seq, run_id, payload FROM _wk_wf_emit ORDER BY seq")])


def status(host: Host) -> dict[str, Any]:
    code, st = host.wk(CLS, OID, "status")
    assert code == 200, st
    assert isinstance(st, dict)
    return st


def until(host: Host, pred: Callable[[dict[str, Any]], bool], timeout: float = 30) -> Any:
    """The status once `pred` holds (polled, without moving the clock)."""
    end = time.monotonic() + timeout
    st = status(host)
    while not pred(st):
        if time.monotonic() > end:
            pytest.fail(f"not reached after {timeout} s: {st}\n" + "\n".join(host.log[-30:]))
        time.sleep(0.02)
        st = status(host)
    return st


def resting_in_run(run: int) -> Callable[[dict[str, Any]], bool]:
    """Asleep on the "rest" of `run` (its steps and its emit done)."""
    return lambda st: (st["runs"] == run and st["state"] == "waiting"
                       and st["wake_at"] is not None and not st["waiting_for"])


def emitted(host: Host) -> list[tuple[int, str, Any, str]]:
    code, page = host.wk(CLS, OID, "events", {"after": 0})
    assert code == 200 and not page["more"], page
    return [(e["offset"], e["name"], e["payload"], e["run_id"]) for e in page["events"]]


def wk_cli(host: Host, *args: str) -> str:
    cmd = [sys.executable, "-m", "wkhost.cli", "workflow", *args, "--server", host.url,
           "--data", str(host.data)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd=REPO)
    assert out.returncode == 0, (args, out.stdout, out.stderr)
    return out.stdout


@pytest.mark.parametrize("mode", ["warm", "always-replay"])
def test_three_runs_continue_as_new_and_complete(launch: Launch, continue_wasm: Path,
                                                 tmp_path: Path, mode: str) -> None:
    """Also with a fresh instance for every event: each run then replays from the stored
    journal, and the switch is made by an instance that never ran the run's steps."""
    extra = ["--always-fresh-instance"] if mode == "always-replay" else []
    host = launch({CLS: continue_wasm}, tmp_path / "data", access={}, extra=extra)
    code, st = host.wk(CLS, OID, "start", {"input": INPUT})
    assert code == 200, st
    first = until(host, resting_in_run(1))
    assert "previous_run_id" not in first and first["positions"] == len(RUN_NAMES), first
    code, sent = host.wk(CLS, OID, "event", {"name": "note", "payload": NOTE})
    assert code == 200, sent
    ids = [first["run_id"]]
    for run in (2, 3):
        host.clock(1000)  # the rest passes: the run continues as new
        pred = resting_in_run(run) if run < RUNS else (lambda s: s["state"] == "completed")
        st = until(host, pred)
        assert (st["runs"], st["previous_run_id"]) == (run, ids[-1]), st
        assert st["run_id"] not in ids, (st, ids)
        ids.append(st["run_id"])
        if run < RUNS:  # the note, sent in run 1, is still pending: it crossed the switch
            assert (st["events_pending"], st["positions"]) == (1, len(RUN_NAMES)), st
    assert st["output"] == OUTPUT and st["events_pending"] == 0, st
    assert emitted(host) == [(r - 1, "run", {"run": r}, ids[r - 1]) for r in (1, 2, 3)]
    doc = json.loads(wk_cli(host, "status", CLS, OID, "--json"))
    assert (doc["runs"], doc["previous_run_id"], doc["run_id"]) == (3, ids[1], ids[2]), doc
    assert f"run 3 (previous run {ids[1]})" in wk_cli(host, "status", CLS, OID)
    assert host.stop() == 0
    left = read_db(tmp_path / "data")
    assert left.effects == {(r, i): 1 for r, i, _ in COUNTS}, left.effects
    assert left.chain == (3, ids[1]), left.chain


def until_down(host: Host, timeout: float = 60) -> None:
    """Move the clock a second at a time (each "rest" passes) until the host dies."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            st = status(host)
            assert st["state"] not in ("completed", "failed", "parked"), st
            host.clock(1000)
        except HostDown:
            return
        time.sleep(0.05)
    pytest.fail("the host did not reach its crash point")


def drive(host: Host, since: int, timeout: float = 60) -> dict[str, Any]:
    """Move the restarted host's fake clock up to `since`, then to each wake time of
    the instance, until it finishes or parks."""
    now = host.clock(0)
    now = host.clock(max(0, since - now))
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        st = status(host)
        if st["state"] in ("completed", "failed", "parked"):
            return st
        if st["wake_at"] is not None and st["wake_at"] > now:
            now = host.clock(st["wake_at"] - now)
        else:
            time.sleep(0.02)
    pytest.fail(f"not finished after {timeout} s: {st}\n" + "\n".join(host.log[-30:]))


def check_switch_cut(left: Left, ids: list[str], new: bool) -> None:
    """At the kill during the switch from run len(ids) (ids: the run ids so far) to the
    next: the old run whole, or (`new`: the switch committed) the new run alone."""
    run = len(ids)
    assert left.integrity == "ok" and left.alarm_at is not None, left
    if new:
        assert left.wf["run_id"] not in ids and left.chain == (run + 1, ids[-1]), left
        assert left.journal == [] and json.loads(left.wf["input"])["run"] == run + 1, left
    else:
        assert left.wf["run_id"] == ids[-1] and left.journal == RUN_NAMES, left
        assert left.chain == (None if run == 1 else (run, ids[-2])), left
        assert json.loads(left.wf["input"]).get("run", 1) == run, left
    assert left.pending == ["note"], left  # kept by the switch, whichever side
    assert left.effects == {(r, i): 1 for r in range(1, run + 1) for i in range(STEPS)}, left
    assert [p for _, _, p in left.emitted] == [{"run": r} for r in range(1, run + 1)], left


@pytest.mark.parametrize("point, skip", POINTS, ids=[f"{p}+{s}" for p, s in POINTS])
def test_a_kill_at_each_statement_of_the_switch(launch: Launch, continue_wasm: Path,
                                                tmp_path: Path, point: str,
                                                skip: int) -> None:
    data = tmp_path / "data"
    host = launch({CLS: continue_wasm}, data, crash_at=point, skip=skip, access={})
    since = host.clock(0)
    code, st = host.wk(CLS, OID, "start", {"input": INPUT})
    assert code == 200, st
    st = until(host, resting_in_run(1))
    code, sent = host.wk(CLS, OID, "event", {"name": "note", "payload": NOTE})
    assert code == 200, sent
    ids = [st["run_id"]]
    if skip:  # to the second switch: run 2's id, as the status shows it
        host.clock(1000)
        ids.append(until(host, resting_in_run(2))["run_id"])
    until_down(host)
    assert host.crashed_at(point), host.log[-20:]
    left = read_db(data)
    check_switch_cut(left, ids, new=point == "sql-after:wk:can-commit")

    host = launch({CLS: continue_wasm}, data, access={})
    st = drive(host, since + 60_000)
    assert st["state"] == "completed" and st["output"] == OUTPUT, st
    assert st["runs"] == RUNS and st["previous_run_id"] not in (None, st["run_id"]), st
    stream = emitted(host)
    assert [(o, p) for o, _, p, _ in stream] == [(r - 1, {"run": r}) for r in (1, 2, 3)]
    assert [rid for *_, rid in stream][:len(ids)] == ids, (stream, ids)
    assert stream[-1][3] == st["run_id"] and stream[-2][3] == st["previous_run_id"], stream
    assert host.stop() == 0
    done = read_db(data)
    assert done.effects == {(r, i): 1 for r, i, _ in COUNTS}, done.effects
    assert done.pending == [] and done.chain == (RUNS, st["previous_run_id"]), done
