"""Groups of branches through `wkhost serve`, with a kill -9 inside the fan-out: at each
write of a branch's row (host/testing/crashpoints.py's points on the statements tagged
/*wk:branch*/), at the group's entry, and at the race's settling. After a restart on the
same data the instance completes with every branch's value in the order given, and a
branch whose result was recorded before the kill is never run again (the ledger counts
every run of every branch).

The guest is tests/guests/wf_groups.py; the ledger is examples/workflows/ledger.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from . import reliability_support
from .reliability_support import SHOP_SOURCES, Host, HostDown, Launch, class_db, has_db, table_names

pytestmark = pytest.mark.e2e

launch = reliability_support.launch  # the fixture, by name

CLS, OID, N = "fan", "f1", 4
OUTPUT = {"got": [f"b{i}" for i in range(N)] + [None], "won": [0, "now"]}
# Each branch row is written twice for a step (its attempt counted, then its result):
# a kill after the 1st, 2nd, ... of those writes; at the group's open and its settling;
# and inside the race.
POINTS = ([("sql-after:wk:branch", k) for k in (0, 1, 3, 6)]
          + [("sql-before:wk:branch", 2), ("sql-after:wk:group-open", 0),
             ("sql-before:wk:group", 0), ("sql-before:wk:group", 1)])


@pytest.fixture(scope="module")
def wasm(build_guest: Callable[[str], Path]) -> dict[str, Path]:
    return {CLS: build_guest("wf_groups"), "ledger": build_guest(SHOP_SOURCES["ledger"])}


def read_db(data: Path) -> tuple[dict[str, int], dict[str, str]]:
    """From copies of the databases: the ledger's count of runs by branch, and each
    branch row's kind by name."""
    runs = {k: n for op, k, n in _rows(data, "ledger", "calls", "SELECT op, key, n FROM calls")
            if op == "attempt"}
    kinds = dict(_rows(data, CLS, "_wk_wf_branch",
                       "SELECT name, kind FROM _wk_wf_branch WHERE pos = 0"))
    return runs, kinds


def _rows(data: Path, cls: str, table: str, sql: str) -> list[Any]:
    if not has_db(data, cls):
        return []
    with class_db(data, cls) as conn:
        return list(conn.execute(sql)) if table in table_names(conn) else []


def until_down(host: Host, timeout: float = 60) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            code, st = host.wk(CLS, OID, "status")
            assert code == 200 and st["state"] not in ("completed", "parked"), st
            if st["state"] == "waiting" and st["waiting_for"] == ["go"]:
                host.wk(CLS, OID, "event", {"name": "go", "payload": "now"})
            host.clock(500)
        except HostDown:
            return
        time.sleep(0.02)
    pytest.fail("the host did not reach its crash point")


def drive(host: Host, timeout: float = 60) -> dict[str, Any]:
    """Move the restarted host's fake clock on, and send "go" once the race waits for
    it, until the instance finishes or parks."""
    end = time.monotonic() + timeout
    sent = False
    while time.monotonic() < end:
        code, st = host.wk(CLS, OID, "status")
        assert code == 200, st
        if st["state"] in ("completed", "failed", "parked"):
            return dict(st)
        if not sent and st["waiting_for"] == ["go"]:
            host.wk(CLS, OID, "event", {"name": "go", "payload": "now"})
            sent = True
        host.clock(500)
        time.sleep(0.02)
    pytest.fail(f"not finished after {timeout} s: {st}\n" + "\n".join(host.log[-30:]))


@pytest.mark.parametrize("point, skip", POINTS, ids=[f"{p}+{s}" for p, s in POINTS])
def test_a_kill_inside_the_fan_out(launch: Launch, wasm: dict[str, Path], tmp_path: Path,
                                   point: str, skip: int) -> None:
    data = tmp_path / "data"
    access = {CLS: "internal", "ledger": "internal"}
    host = launch(wasm, data, crash_at=point, skip=skip, access=access)
    host.wk_unless_killed(CLS, OID, "start", {"input": {"n": N}})
    until_down(host)
    assert host.crashed_at(point), host.log[-20:]
    runs_at_kill, kinds_at_kill = read_db(data)

    host = launch(wasm, data, access=access)
    st = drive(host)
    assert st["state"] == "completed" and st["output"] == OUTPUT, st
    assert host.stop() == 0
    runs, kinds = read_db(data)
    assert set(runs) == {f"b{i}" for i in range(N)}, runs
    for name, kind in kinds_at_kill.items():
        if kind == "S":  # recorded before the kill: never run again
            assert runs[name] == runs_at_kill[name], (name, runs_at_kill, runs)
    assert all(1 <= n <= 2 for n in runs.values()), runs  # at most the cut attempt again
    assert all(kinds[f"b{i}"] == "S" for i in range(N)), kinds
