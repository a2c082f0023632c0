"""A kill -9 during a Cloudflare-shaped `step.do` that has a rollback, through `wkhost
serve` (host/testing/crashpoints.py): inside the step's fn (the index write its call
makes in the `pages` actor), and inside the rollbacks (their unindex writes, before and
after, and the finish once every rollback is recorded). After a restart on the same data
the instance finishes as errored, every batch indexed is taken out again (none lost), a
rollback recorded done before the kill is never run again, and each rollback is recorded
exactly once.

The workflow is examples/workflows/ingest/publish.py: index a, b and c (each step with
its rollback), then an announcement the catalogue refuses (a NonRetryableError).
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Any

import pytest

from . import cloudflare_support, reliability_support
from .cloudflare_support import ACCESS, Example
from .reliability_support import Host, HostDown, Launch, class_db, has_db, table_names

# The first test's setup builds the example's four components (cloudflare_support.cf_wasm)
# when the cache has none: minutes on a loaded machine, past pytest's 300 s default.
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

cf_wasm = cloudflare_support.cf_wasm
launch = reliability_support.launch

IID = "c1"
KEYS = {f"{IID}:{b}" for b in "abc"}
ROLLBACKS = ["compensate:index c", "compensate:index b", "compensate:index a"]
# (point, skip, the positions recorded done when the kill comes): the index of b written
# in the step's fn (its second hit); the first and the third unindex, before and after
# their write; the finish, every rollback recorded.
POINTS = [("sql-after:app:effect", 1, ["index a"]),
          ("sql-before:app:undo", 0, ["index a", "index b", "index c"]),
          ("sql-after:app:undo", 0, ["index a", "index b", "index c"]),
          ("sql-after:app:undo", 2, ["index a", "index b", "index c",
                                     "compensate:index c", "compensate:index b"]),
          ("sql-before:wk:finish", 0, ["index a", "index b", "index c", *ROLLBACKS])]


Books = dict[tuple[str, str], int]
Steps = dict[str, tuple[str, int, int]]  # name -> (kind, attempts, how many positions)


def read(data: Path) -> tuple[Books, Steps]:
    """From copies of the databases: the pages actor's call counts, and the instance's
    recorded positions by name."""
    calls: Books = {}
    if has_db(data, "pages"):
        with class_db(data, "pages") as conn:
            if "calls" in table_names(conn):
                calls = {(o, k): n for o, k, n in conn.execute("SELECT op, key, n FROM calls")}
    steps: Steps = {}
    if has_db(data, "publish"):
        with class_db(data, "publish") as conn:
            if "_wk_wf_step" in table_names(conn):
                for name, kind, attempts in conn.execute(
                        "SELECT name, kind, attempts FROM _wk_wf_step ORDER BY pos"):
                    seen = steps.get(name, ("", 0, 0))[2]
                    steps[name] = (kind, attempts, seen + 1)
    return calls, steps


def until_down(host: Host, timeout: float = 60) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            code, st = host.wk("publish", IID, "status")  # 404 until the create is made
        except HostDown:
            return
        assert code in (200, 404) and not (code == 200 and st["state"] == "failed"), st
        time.sleep(0.02)
    pytest.fail("the host did not reach its crash point:\n" + "\n".join(host.log[-20:]))


@pytest.mark.parametrize("point, skip, done", POINTS, ids=[f"{p}+{s}" for p, s, _ in POINTS])
def test_a_kill_inside_a_step_with_a_rollback(launch: Launch, cf_wasm: dict[str, Path],
                                              tmp_path: Path, point: str, skip: int,
                                              done: list[str]) -> None:
    data = tmp_path / "data"
    host = launch(cf_wasm, data, crash_at=point, skip=skip, access=ACCESS)
    since = host.clock(0)
    # The create only records the instance; its first run (its own event) may reach the
    # point before the answer has gone out.
    with contextlib.suppress(HostDown):
        Example(host).create("publish", IID, materialId="m1", fail=True)
    until_down(host)
    assert host.crashed_at(point), host.log[-20:]
    calls_at_kill, at_kill = read(data)
    assert [n for n, (kind, _, _) in at_kill.items() if kind == "S"] == done, at_kill

    host = launch(cf_wasm, data, access=ACCESS)
    ex = Example(host)
    host.clock(max(0, since + 60_000 - host.clock(0)))  # past every backoff before the kill
    s = ex.drive("publish", IID, cloudflare_support.resting)
    assert s["state"] == "failed", s
    assert ex.cf("publish", IID)["status"] == "errored"
    indexed, unindexed = ex.search_index()
    why = s["error"].removesuffix(" (compensated: 3 compensation(s) ran)")
    assert indexed == KEYS and unindexed == dict.fromkeys(KEYS, why), (s, unindexed)
    calls = ex.calls()
    assert host.stop() == 0
    _, steps = read(data)
    assert [n for n in steps if n.startswith("compensate:")] == ROLLBACKS, steps
    for name in ROLLBACKS:
        assert steps[name][0] == "S" and steps[name][2] == 1, (name, steps)  # once, done
        key = f"{IID}:{name[-1]}"
        if at_kill.get(name, ("",))[0] == "S":  # done before the kill: not run again
            assert steps[name][1] == at_kill[name][1], (name, at_kill, steps)
            assert calls[("unindex", key)] == calls_at_kill[("unindex", key)], calls
    assert_rollbacks_once(calls, at_kill)


def assert_rollbacks_once(calls: dict[tuple[str, str], int], at_kill: dict[str, Any]) -> None:
    """A rollback runs again only if the kill came before it was recorded: one call, or
    two where the kill cut the one under way."""
    for name in ROLLBACKS:
        n = calls[("unindex", f"{IID}:{name[-1]}")]
        assert n == 1 or (n == 2 and at_kill.get(name, ("",))[0] != "S"), (name, calls)
