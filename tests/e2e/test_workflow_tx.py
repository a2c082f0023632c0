"""A tx step's own SQL and its record through `wkhost serve`, with a kill -9 at each of
its statements (host/testing/crashpoints.py): at the kill the instance's own table holds
a step's effect exactly when the journal holds the step's result; after a restart on the
same data the instance completes, each effect is there once, and a step whose result was
recorded before the kill is never attempted again.

The guest is tests/guests/wf_tx.py: two tx steps that book "a" and "b" in its own
`ledger` table (the insert tagged /*app:effect*/), then a tx step that counts them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from . import reliability_support
from .reliability_support import Host, HostDown, Launch, class_db, table_names

pytestmark = pytest.mark.e2e

launch = reliability_support.launch  # the fixture, by name

CLS, OID = "tx", "t1"
INPUT = {"entries": [["a", 100], ["b", 200]]}
OUTPUT = {"totals": [100, 300], "counts": [["a", 1], ["b", 1]]}
BOOKS = {"book a": "a", "book b": "b"}

# Each statement of a tx step (guest_sdk/wkguest/workflow/tx.py), before and after it
# runs, in the first step; a skip of 1 is the same point in the second step.
TAGS = ["wk:attempt", "wk:tx-begin", "wk:tx-tables", "app:effect", "wk:tx-check",
        "wk:result", "wk:tx-commit"]
POINTS = ([(f"sql-{when}:{tag}", 0) for tag in TAGS for when in ("before", "after")]
          + [(f"sql-after:{tag}", 1) for tag in ("app:effect", "wk:result", "wk:tx-commit")]
          + [("sql-before:wk:tx-begin", 2), ("sql-before:wk:finish", 0)])


@pytest.fixture(scope="module")
def tx_wasm(build_guest: Callable[[str], Path]) -> Path:
    return build_guest("wf_tx")


def read_db(data: Path) -> tuple[dict[str, int], dict[str, tuple[str, int]]]:
    """From a copy of the instance's database: how many rows each entry has in its own
    table, and each recorded position's (kind, attempts) by name."""
    with class_db(data, CLS) as conn:
        tables = table_names(conn)
        booked = dict(conn.execute("SELECT entry, count(*) FROM ledger GROUP BY entry")
                      if "ledger" in tables else [])
        steps = {n: (k, a) for n, k, a in conn.execute(
            "SELECT name, kind, attempts FROM _wk_wf_step") if "_wk_wf_step" in tables}
    return booked, steps


def both_or_neither(booked: dict[str, int], steps: dict[str, tuple[str, int]]) -> None:
    for name, entry in BOOKS.items():
        recorded = steps.get(name, ("", 0))[0] == "S"
        assert booked.get(entry, 0) == int(recorded), (name, booked, steps)


def until_down(host: Host, timeout: float = 60) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            code, st = host.wk(CLS, OID, "status")
        except HostDown:
            return
        assert code == 200 and st["state"] not in ("completed", "parked"), st
        time.sleep(0.02)
    pytest.fail("the host did not reach its crash point")


def drive(host: Host, since: int, timeout: float = 60) -> dict[str, Any]:
    """Move the restarted host's fake clock up to `since`, then to each wake time of
    the instance, until it finishes or parks."""
    now = host.clock(0)
    now = host.clock(max(0, since - now))
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        code, st = host.wk(CLS, OID, "status")
        assert code == 200, st
        if st["state"] in ("completed", "failed", "parked"):
            return dict(st)
        if st["wake_at"] is not None and st["wake_at"] > now:
            now = host.clock(st["wake_at"] - now)
        else:
            time.sleep(0.02)
    pytest.fail(f"not finished after {timeout} s: {st}\n" + "\n".join(host.log[-30:]))


@pytest.mark.parametrize("point, skip", POINTS, ids=[f"{p}+{s}" for p, s in POINTS])
def test_a_kill_at_each_statement_of_a_tx_step(launch: Launch, tx_wasm: Path,
                                               tmp_path: Path, point: str,
                                               skip: int) -> None:
    data = tmp_path / "data"
    host = launch({CLS: tx_wasm}, data, crash_at=point, skip=skip, access={})
    since = host.clock(0)
    host.wk_unless_killed(CLS, OID, "start", {"input": INPUT})
    until_down(host)
    assert host.crashed_at(point), host.log[-20:]
    booked, at_kill = read_db(data)
    both_or_neither(booked, at_kill)

    host = launch({CLS: tx_wasm}, data, access={})
    st = drive(host, since + 60_000)
    assert st["state"] == "completed" and st["output"] == OUTPUT, st
    assert host.stop() == 0
    booked, steps = read_db(data)
    assert booked == {"a": 1, "b": 1}, booked
    both_or_neither(booked, steps)
    for name, (kind, attempts) in at_kill.items():
        if kind == "S":  # recorded before the kill: never attempted again
            assert steps[name] == ("S", attempts), (name, at_kill, steps)
    assert sum(a for _, a in steps.values()) <= len(steps) + 1, steps
