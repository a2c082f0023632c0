"""Child workflows through `wkhost serve`: a parent of class `parents` awaits a child of
class `kids` (one component served as both, tests/guests/wf_child.py), with a kill -9
inside the child (host/testing/crashpoints.py): in one of its tx steps, right after its
finish, and in the parent's recording of the child's notice. After a restart on the same
data both finish, the parent has the child's output, and no recorded step's effect is
repeated (each tx step's row in its instance's own table is there once). Once more
across `--processes 2`, where the child's process is the one killed.
"""

from __future__ import annotations

import http.client
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from . import reliability_support
from .reliability_support import Host, HostDown, Launch, class_db, table_names

pytestmark = pytest.mark.e2e

launch = reliability_support.launch  # the fixture, by name

PARENT, KID = "parents", "kids"
INPUT = {"kid_cls": KID, "kid_id": "k1", "n": 4}
OUTPUT = {"before": "b", "after": "a",
          "child": {"kid": "k1", "charged": 40, "shipped": 5}}
EFFECTS = {PARENT: {"before": 1, "after": 1}, KID: {"charge": 1, "ship": 1}}
# (crash point, hits to skip): the child's first and second tx insert, the child's
# finish (before its notice is sent), and the parent's COMMIT of the notice.
POINTS = [("sql-after:app:kid-effect", 0), ("sql-after:app:kid-effect", 1),
          ("sql-after:wk:finish", 0), ("sql-before:wk:child-notice-commit", 0)]


@pytest.fixture(scope="module")
def child_wasm(build_guest: Callable[[str], Path]) -> Path:
    return build_guest("wf_child")


def classes(wasm: Path) -> dict[str, Path]:
    return {PARENT: wasm, KID: wasm}


def read_db(data: Path, cls: str) -> tuple[dict[str, int], dict[str, tuple[str, int]]]:
    """From a copy of `cls`'s one instance database: each effect's row count, and each
    recorded position's (kind, attempts) by name."""
    with class_db(data, cls) as conn:
        tables = table_names(conn)
        effects = dict(conn.execute("SELECT name, count(*) FROM effects GROUP BY name")
                       if "effects" in tables else [])
        steps = {n: (k, a) for n, k, a in conn.execute(
            "SELECT name, kind, attempts FROM _wk_wf_step") if "_wk_wf_step" in tables}
    return effects, steps


def until_crashed(host: Host, point: str, timeout: float = 60) -> None:
    """Poll the parent until the host dies (one process) or logs the crash point."""
    end = time.monotonic() + timeout
    while time.monotonic() < end and not host.crashed_at(point):
        try:
            code, st = host.wk(PARENT, "p1", "status")
        except HostDown:
            return
        except (OSError, http.client.HTTPException):
            code = 0  # several processes: the one that took the request was killed
        if code == 200:
            assert st["state"] not in ("completed", "failed", "parked"), st
        time.sleep(0.02)
    assert host.crashed_at(point), host.log[-20:]


def drive(host: Host, timeout: float = 90) -> dict[str, Any]:
    """Move the fake clock a second at a time (backoffs, the owed notice's retries)
    until the parent rests."""
    end = time.monotonic() + timeout
    st: Any = None
    while time.monotonic() < end:
        code, st = host.wk(PARENT, "p1", "status")
        if code == 200 and st["state"] in ("completed", "failed", "cancelled", "parked"):
            return dict(st)
        host.clock(1000)
        time.sleep(0.02)
    pytest.fail(f"the parent is not finished after {timeout} s: {st}\n"
                + "\n".join(host.log[-30:]))


def kill_then_finish(launch: Launch, wasm: Path, data: Path, point: str, skip: int,
                     extra: list[str]) -> None:
    host = launch(classes(wasm), data, crash_at=point, skip=skip, extra=extra, access={})
    host.wk_unless_killed(PARENT, "p1", "start", {"input": INPUT})
    until_crashed(host, point)
    host.close()  # one process: gone already; several: the rest stop here
    at_kill = {cls: read_db(data, cls) for cls in (PARENT, KID)}
    for effects, steps in at_kill.values():  # an effect is there exactly when recorded
        assert all(steps.get(n, ("", 0))[0] == "S" for n in effects), (effects, steps)

    host = launch(classes(wasm), data, extra=extra, access={})
    st = drive(host)
    assert st["state"] == "completed" and st["output"] == OUTPUT, st
    code, kid = host.wk(KID, "k1", "status")
    assert code == 200 and kid["output"] == OUTPUT["child"], kid
    assert host.stop() == 0
    for cls in (PARENT, KID):
        effects, steps = read_db(data, cls)
        assert effects == EFFECTS[cls], (cls, effects)
        for name, (kind, attempts) in at_kill[cls][1].items():
            if kind == "S":  # recorded before the kill: never attempted again
                assert steps[name] == ("S", attempts), (cls, name, at_kill[cls], steps)


@pytest.mark.parametrize("point, skip", POINTS, ids=[f"{p}+{s}" for p, s in POINTS])
def test_a_kill_inside_the_child(launch: Launch, child_wasm: Path, tmp_path: Path,
                                 point: str, skip: int) -> None:
    kill_then_finish(launch, child_wasm, tmp_path / "data", point, skip, [])


def test_a_kill_inside_the_child_across_two_processes(launch: Launch, child_wasm: Path,
                                                      tmp_path: Path) -> None:
    kill_then_finish(launch, child_wasm, tmp_path / "data", "sql-after:app:kid-effect", 0,
                     ["--processes", "2"])
