"""Saga compensation through `wkhost serve`, with a kill -9 inside the compensations
(host/testing/crashpoints.py): after a restart on the same data the saga finishes (failed
for its own failure, cancelled for a cancel with compensation), every step's effect and
every compensation's undo is in the instance's own table exactly once, and a
compensation recorded before the kill is never attempted again. `wkhost workflow cancel
--compensate` too.

The guest is tests/guests/wf_saga.py: three tx steps that book a, b and c, each with a tx
compensation that undoes it (tagged /*app:undo*/), then a step declined for good.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from . import reliability_support
from .reliability_support import Host, HostDown, Launch, class_db, table_names
from .server import REPO

pytestmark = pytest.mark.e2e

launch = reliability_support.launch  # the fixture, by name

CLS = "saga"
ENTRIES = [["a", 100], ["b", 20], ["c", 3]]
BOOKED = {("a", 100): 1, ("b", 20): 1, ("c", 3): 1}
UNDONE = {("a", -100): 1, ("b", -20): 1, ("c", -3): 1}
UNDOES = {"compensate:book a": ("a", -100), "compensate:book b": ("b", -20),
          "compensate:book c": ("c", -3)}
RESTING = ("completed", "failed", "cancelled", "parked")

# Inside the compensations (they run c, b, a): each one's undo written, before and after
# each one's commit (the books' three commits come first), its attempt counted; the
# instance marked compensating; the finish.
POINTS = [("sql-after:app:undo", 0), ("sql-after:app:undo", 2),
          ("sql-before:wk:tx-commit", 3), ("sql-after:wk:tx-commit", 4),
          ("sql-after:wk:attempt", 5), ("sql-after:wk:saga-state", 0),
          ("sql-before:wk:finish", 0)]


@pytest.fixture(scope="module")
def saga_wasm(build_guest: Callable[[str], Path]) -> Path:
    return build_guest("wf_saga")


def read_db(data: Path) -> tuple[dict[tuple[str, int], int], dict[str, tuple[str, int]]]:
    """From a copy of the instance's database: the ledger's rows counted by (entry,
    delta), and each recorded position's (kind, attempts) by name."""
    with class_db(data, CLS) as conn:
        tables = table_names(conn)
        rows = {(e, d): n for e, d, n in conn.execute(
            "SELECT entry, delta, count(*) FROM ledger GROUP BY entry, delta")
                } if "ledger" in tables else {}
        steps = {n: (k, a) for n, k, a in conn.execute(
            "SELECT name, kind, attempts FROM _wk_wf_step")} if "_wk_wf_step" in tables else {}
    return rows, steps


def undo_iff_recorded(rows: dict[tuple[str, int], int],
                      steps: dict[str, tuple[str, int]]) -> None:
    for name, undo in UNDOES.items():
        recorded = steps.get(name, ("", 0))[0] == "S"
        assert rows.get(undo, 0) == int(recorded), (name, rows, steps)


def until_down(host: Host, oid: str, timeout: float = 60) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            code, st = host.wk(CLS, oid, "status")
        except HostDown:
            return
        assert code == 200 and st["state"] not in RESTING, st
        time.sleep(0.02)
    pytest.fail("the host did not reach its crash point")


def drive(host: Host, oid: str, since: int, timeout: float = 60) -> dict[str, Any]:
    """Move the restarted host's fake clock up to `since`, then to each wake time of the
    instance, until it rests."""
    now = host.clock(0)
    now = host.clock(max(0, since - now))
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        code, st = host.wk(CLS, oid, "status")
        assert code == 200, st
        if st["state"] in RESTING:
            return dict(st)
        if st["wake_at"] is not None and st["wake_at"] > now:
            now = host.clock(st["wake_at"] - now)
        else:
            time.sleep(0.02)
    pytest.fail(f"not finished after {timeout} s: {st}\n" + "\n".join(host.log[-30:]))


def after_restart(launch: Launch, saga_wasm: Path, data: Path, oid: str, since: int,
                  at_kill: dict[str, tuple[str, int]]) -> dict[str, Any]:
    host = launch({CLS: saga_wasm}, data, access={})
    st = drive(host, oid, since + 60_000)
    assert host.stop() == 0
    rows, steps = read_db(data)
    assert rows == BOOKED | UNDONE, rows  # each book and each undo exactly once
    for name, (kind, attempts) in at_kill.items():
        if kind == "S":  # recorded before the kill: never attempted again
            assert steps[name] == ("S", attempts), (name, at_kill, steps)
    return st


@pytest.mark.parametrize("point, skip", POINTS, ids=[f"{p}+{s}" for p, s in POINTS])
def test_a_kill_inside_the_compensations_of_a_failed_saga(
        launch: Launch, saga_wasm: Path, tmp_path: Path, point: str, skip: int) -> None:
    data = tmp_path / "data"
    host = launch({CLS: saga_wasm}, data, crash_at=point, skip=skip, access={})
    since = host.clock(0)
    host.wk_unless_killed(CLS, "s1", "start", {"input": {"entries": ENTRIES}})
    until_down(host, "s1")
    assert host.crashed_at(point), host.log[-20:]
    rows, at_kill = read_db(data)
    undo_iff_recorded(rows, at_kill)
    assert {r: n for r, n in rows.items() if n and r[1] > 0} == BOOKED  # all booked

    st = after_restart(launch, saga_wasm, data, "s1", since, at_kill)
    assert st["state"] == "failed", st
    assert st["error"] == ("step 'charge' failed after 1 attempt(s): card declined "
                           "(compensated: 3 compensation(s) ran)"), st


def test_a_kill_inside_the_compensations_of_a_cancel(launch: Launch, saga_wasm: Path,
                                                     tmp_path: Path) -> None:
    """Cancelled with compensation while waiting for "go": the kill comes in the run
    that the cancel's alarm brings, inside the second undo."""
    data = tmp_path / "data"
    host = launch({CLS: saga_wasm}, data, crash_at="sql-after:app:undo", skip=1, access={})
    since = host.clock(0)
    code, st = host.wk(CLS, "s2", "start", {"input": {"entries": ENTRIES, "wait": True}})
    assert code == 200, st
    wait_for(host, "s2", "waiting")
    st = host.wk_unless_killed(CLS, "s2", "cancel", {"compensate": True})
    assert st is None or st["state"] == "compensating", st
    until_down(host, "s2")
    assert host.crashed_at("sql-after:app:undo"), host.log[-20:]
    rows, at_kill = read_db(data)
    undo_iff_recorded(rows, at_kill)
    assert at_kill["compensate:book c"][0] == "S" and "charge" not in at_kill, at_kill

    st = after_restart(launch, saga_wasm, data, "s2", since, at_kill)
    assert (st["state"], st["error"]) == ("cancelled", None), st
    assert "charge" not in read_db(data)[1]  # the cancel stopped it before


def wait_for(host: Host, oid: str, state: str, timeout: float = 30) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        code, st = host.wk(CLS, oid, "status")
        if code == 200 and st["state"] == state:
            return
        time.sleep(0.02)
    pytest.fail(f"{oid} never became {state}")


def wkhost(host: Host, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "wkhost.cli", "workflow", *args, "--server", host.url,
           "--data", str(host.data)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd=REPO)


def test_wkhost_workflow_cancel_compensate(launch: Launch, saga_wasm: Path,
                                           tmp_path: Path) -> None:
    host = launch({CLS: saga_wasm}, tmp_path / "data", access={})
    code, st = host.wk(CLS, "s3", "start", {"input": {"entries": ENTRIES, "wait": True}})
    assert code == 200, st
    wait_for(host, "s3", "waiting")
    out = wkhost(host, "cancel", CLS, "s3", "--compensate")
    assert out.returncode == 0, (out.stdout, out.stderr)
    assert out.stdout.startswith(f"{CLS}/s3: compensating, "), out.stdout
    done = wkhost(host, "status", CLS, "s3", "--wait", "--timeout", "30")
    assert done.returncode == 11, (done.stdout, done.stderr)  # cancelled
    assert done.stdout.startswith(f"{CLS}/s3: cancelled, 6 positions"), done.stdout
    again = wkhost(host, "cancel", CLS, "s3", "--compensate")  # still cancelled
    assert (again.returncode, again.stdout) == (0, done.stdout), again
    assert host.stop() == 0
    rows, steps = read_db(tmp_path / "data")
    assert rows == BOOKED | UNDONE, rows
    assert [n for n in steps if n.startswith("compensate:")] == list(UNDOES)[::-1]
