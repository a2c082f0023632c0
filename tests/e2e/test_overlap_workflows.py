"""A group's async step branches wait together, through a real server and a real site
that holds its answers (holding_site.py): overlap shown by the site's peak of requests
held at once, never by wall time; their idempotency keys counted by the site, across
retries and kill -9.

The guest is tests/guests/wf_overlap.py; its "call" branches call the probe.
"""

from __future__ import annotations

import random
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from . import reliability_support
from .holding_site import HoldingSite, holding_site
from .reliability_support import Host, HostDown, Launch, snapshot

launch = reliability_support.launch  # the fixture, by name
CLS = "fan"
FINISHED = ("completed", "failed", "parked")


@pytest.fixture(scope="module")
def wasm(build_guest: Callable[[str], Path]) -> dict[str, Path]:
    return {CLS: build_guest("wf_overlap"), "probe": build_guest("probe")}


@pytest.fixture
def site() -> Iterator[HoldingSite]:
    with holding_site() as s:
        yield s


def serve(launch: Launch, wasm: dict[str, Path], site: HoldingSite, data: Path) -> Host:
    return launch(wasm, data, extra=["--allow-http", site.address], access={})


def start(host: Host, iid: str, site: HoldingSite, **inp: Any) -> None:
    code, answer = host.wk(CLS, iid, "start", {"input": {"url": site.url(""), **inp}})
    assert code == 200, answer


def finish(host: Host, iids: list[str], timeout: float = 90) -> dict[str, dict[str, Any]]:
    """Each instance's status once it finished, moving the fake clock a second at a
    time (the branches' backoffs)."""
    end, done = time.monotonic() + timeout, {}
    while time.monotonic() < end:
        for iid in iids:
            if iid not in done:
                code, st = host.wk(CLS, iid, "status")
                assert code == 200, st
                if st["state"] in FINISHED:
                    done[iid] = dict(st)
        if len(done) == len(iids):
            return done
        host.clock(1000)
        time.sleep(0.05)
    pytest.fail(f"not finished after {timeout} s: {sorted(set(iids) - set(done))}\n"
                + "\n".join(host.log[-30:]))


def test_five_async_branches_are_in_flight_at_once(launch: Launch, wasm: dict[str, Path],
                                                    site: HoldingSite, tmp_path: Path) -> None:
    host = serve(launch, wasm, site, tmp_path / "data")
    site.reset(want=5)
    start(host, "f1", site, n=5)
    st = finish(host, ["f1"])["f1"]
    assert st["state"] == "completed", st
    assert site.peak == 5
    assert st["output"]["branches"] == [f"POST /b{i}/f1" for i in range(5)]
    keys = site.keys("/b")
    run = keys[0].rsplit("-", 1)[0] if keys[0] else None
    assert sorted(keys) == [f"{run}-0.{i}" for i in range(5)], keys
    # the plain step after: its first POST has the step's key, its second "-2"
    assert site.keys("/after") == [f"{run}-1", f"{run}-1-2"]


def test_async_branches_overlap_their_actor_calls(launch: Launch, wasm: dict[str, Path],
                                                   site: HoldingSite, tmp_path: Path) -> None:
    host = serve(launch, wasm, site, tmp_path / "data")
    site.reset(want=4)
    start(host, "c1", site, n=4, call=True)
    st = finish(host, ["c1"])["c1"]
    assert st["state"] == "completed", st
    assert site.peak == 4
    assert st["output"]["branches"] == [f"POST /b{i}/c1" for i in range(4)]


def test_plain_branches_still_take_turns(launch: Launch, wasm: dict[str, Path],
                                         site: HoldingSite, tmp_path: Path) -> None:
    host = serve(launch, wasm, site, tmp_path / "data")
    site.reset(want=3, hold_s=0.2)
    start(host, "s1", site, n=3, sync=True)
    st = finish(host, ["s1"])["s1"]
    assert st["state"] == "completed" and site.peak == 1, (st, site.peak)


def test_a_failing_branch_retries_on_its_own_with_the_same_key(
        launch: Launch, wasm: dict[str, Path], site: HoldingSite, tmp_path: Path) -> None:
    host = serve(launch, wasm, site, tmp_path / "data")
    site.reset(want=3)
    start(host, "r1", site, n=3, fails=2)
    st = finish(host, ["r1"])["r1"]
    assert st["state"] == "completed", st
    for i in range(3):
        keys = site.keys(f"/fail/2/b{i}/")
        assert len(keys) == 3 and len(set(keys)) == 1, (i, keys)  # 2 failed, 1 answered
    assert site.peak == 3  # the first attempts overlapped


@pytest.mark.parametrize("group", ["any", "all_settled"])
def test_any_and_all_settled_overlap_too(launch: Launch, wasm: dict[str, Path],
                                         site: HoldingSite, tmp_path: Path, group: str) -> None:
    host = serve(launch, wasm, site, tmp_path / "data")
    site.reset(want=3)
    start(host, "g1", site, n=3, group=group)
    st = finish(host, ["g1"])["g1"]
    assert st["state"] == "completed" and site.peak == 3, (st, site.peak)
    got = st["output"]["branches"]
    if group == "any":
        index, value = got
        assert value == f"POST /b{index}/g1"
    else:
        assert got == [[True, f"POST /b{i}/g1", None] for i in range(3)]


ROUNDS = 6
INSTANCES = 6
BRANCHES = 4


def branch_rows(data: Path) -> dict[tuple[str, str], tuple[str, int]]:
    """(instance, branch name): its row's kind and attempts counted, read from a copy of
    each instance's database."""
    out = {}
    for (cls, iid), a in snapshot(data).items():
        if cls != CLS:
            continue
        conn = sqlite3.connect(a.path)
        try:
            for name, kind, attempts in conn.execute(
                    "SELECT name, kind, attempts FROM _wk_wf_branch WHERE pos = 0"):
                out[(iid, name)] = (kind, attempts or 0)
        finally:
            conn.close()
    return out


def test_kill_9_inside_overlapping_branches_loses_nothing(
        launch: Launch, wasm: dict[str, Path], site: HoldingSite, tmp_path: Path) -> None:
    """kill -9 at random moments while instances' branches are in flight together (each
    branch's site path fails once first, so retries overlap with first attempts), then a
    last host runs them to the end: every instance completes with the right output, no
    branch made more requests than it counted attempts, and every request of a branch
    carried that branch's one key."""
    seed = random.randrange(1 << 30)
    print(f"seed={seed}")
    rng = random.Random(seed)
    data = tmp_path / "data"
    site.reset(want=1000, hold_s=0.5)  # each request held half a second
    iids = [f"k{i}" for i in range(INSTANCES)]
    kills, started = 0, []
    for round_no in range(ROUNDS):
        host = serve(launch, wasm, site, data)
        timer = threading.Timer(rng.uniform(0.2, 1.2), host.kill_now)
        timer.start()
        try:
            for iid in iids[round_no % 3::3]:  # some start in each round
                start(host, iid, site, n=BRANCHES, fails=1)
                started.append(iid)
            finish(host, sorted(set(started)), timeout=20)
        except (HostDown, OSError):
            kills += 1
        except BaseException:
            if host.alive:
                raise
            kills += 1
        finally:
            timer.cancel()
            if host.alive:
                host.kill_now()
            host.wait_exit(10)
    assert kills >= ROUNDS // 2, f"only {kills} kills landed (seed {seed})"
    host = serve(launch, wasm, site, data)
    for iid in iids:  # a start the kills lost is made now (a start is idempotent)
        start(host, iid, site, n=BRANCHES, fails=1)
    done = finish(host, iids)
    assert host.stop() == 0
    for iid, st in done.items():
        assert st["state"] == "completed", (iid, st)
        assert st["output"]["branches"] == [f"POST /fail/1/b{i}/{iid}"
                                            for i in range(BRANCHES)], (seed, st)
    rows = branch_rows(data)
    for iid in iids:
        for i in range(BRANCHES):
            keys = site.keys(f"/fail/1/b{i}/{iid}")
            kind, attempts = rows[(iid, f"b{i}")]
            assert kind == "S" and 2 <= len(keys) <= attempts, (seed, iid, i, keys, attempts)
            assert len(set(keys)) == 1, (seed, iid, i, keys)
    every = Counter(k for k in site.keys("/fail/") if k)
    assert len(every) == INSTANCES * BRANCHES  # one key per branch, none shared
    for iid in iids:  # the plain step after: its nth POST has the same key in any attempt
        run = site.keys(f"/fail/1/b0/{iid}")[0].rsplit("-", 1)[0]  # type: ignore[union-attr]
        after = site.keys(f"/after/{iid}")
        assert set(after) == {f"{run}-1", f"{run}-1-2"}, (seed, iid, after)
        assert done[iid]["output"]["after"] == [200, 200]
