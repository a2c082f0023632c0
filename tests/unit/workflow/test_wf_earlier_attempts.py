"""The attempts a restart from a step (or a rescue) takes away, kept as earlier attempts
(core/earlier_attempts.py) and shown by the steps route under the position of the same
number and name: with their restart's time, their outcomes, errors and tracebacks; a cut
attempt nobody explained; a group's branches; not under a position that other code now
reaches; bounded; none kept by a restart from the start (a new run)."""

from __future__ import annotations

from typing import Any

import pytest
from wkguest.workflow import Config, Run, Step
from wkguest.workflow.core import earlier_attempts
from wkguest.workflow.testing import FakeHost, Trap

from .conftest import Raw

TRIES: dict[str, int] = {}


@pytest.fixture(autouse=True)
def _reset() -> None:
    TRIES.clear()


def flaky(name: str, fails: int) -> Any:
    """A step function that raises on its first `fails` calls, and counts every call."""
    def f() -> str:
        TRIES[name] = TRIES.get(name, 0) + 1
        if TRIES[name] <= fails:
            raise RuntimeError(f"{name} busy ({TRIES[name]})")
        return f"{name}-ok"
    return f


def order(run: Run, _: Any) -> Any:
    """reserve, then a charge that fails twice, then notify."""
    return [run.step("reserve", flaky("reserve", 0)),
            run.step("charge", flaky("charge", 2), attempts=5, backoff_ms=100),
            run.step("notify", flaky("notify", 0))]


def steps(host: FakeHost, **msg: Any) -> list[dict[str, Any]]:
    status, out = Raw(host, "w")("1", "steps", {"attempts": True, **msg})
    assert status == 200, out
    return list(out["steps"])


def completed(host: FakeHost, fn: Any = order, state: str = "completed") -> Any:
    """A client of instance "1" of `fn`, run until it rests in `state`."""
    host.serve("w", fn, Config())
    c = host.client("w")
    c.start("1")
    for _ in range(10):
        host.advance(1000)
    assert c.status("1").state == state
    return c


def test_a_restart_from_a_step_keeps_the_attempts_it_removes(any_host: FakeHost) -> None:
    c = completed(any_host)
    before = {s["name"]: s["history"] for s in steps(any_host)}
    at = any_host.clock.now()
    assert c.restart("1", step="charge").positions == 1
    for _ in range(3):
        any_host.advance(1000)
    assert c.status("1").state == "completed"
    got = {s["name"]: s for s in steps(any_host)}
    charge = got["charge"]
    # The charge ran once more (its fourth call returned), and its three attempts from
    # before the restart are there, as they were, with the restart's time.
    assert [(a["attempt"], a["outcome"]) for a in charge["history"]] == [(1, "returned")]
    assert [(e["attempt"], e["outcome"], e["error"]) for e in charge["earlier"]] == [
        (1, "failed", "RuntimeError: charge busy (1)"),
        (2, "failed", "RuntimeError: charge busy (2)"), (3, "returned", None)]
    assert {e["moved_at"] for e in charge["earlier"]} == {at}
    keys = ("attempt", "started_at", "ended_at", "duration_ms", "outcome", "error", "fuel",
            "traceback", "branch", "name")
    assert [{k: e[k] for k in keys} for e in charge["earlier"]] == [
        {k: a[k] for k in keys} for a in before["charge"]]
    assert "charge busy (1)" in charge["earlier"][0]["traceback"]
    assert charge["earlier_more"] == 0
    assert [e["outcome"] for e in got["notify"]["earlier"]] == ["returned"]
    assert got["reserve"]["earlier"] == []  # kept by the restart: never removed


def test_a_rescue_keeps_the_attempts_of_the_step_it_runs_again(host: FakeHost) -> None:
    def failing(run: Run, _: Any) -> Any:  # the charge fails for good on its 2 attempts
        return run.step("charge", flaky("charge", 2), attempts=2, backoff_ms=100)

    c = completed(host, failing, state="failed")
    at = host.clock.now()
    c.rescue("1")
    for _ in range(3):
        host.advance(1000)
    assert c.status("1").state == "completed"  # its third call returns
    [charge] = steps(host)
    assert [(a["attempt"], a["outcome"]) for a in charge["history"]] == [(1, "returned")]
    assert [(e["move"], e["moved_at"], e["attempt"], e["outcome"])
            for e in charge["earlier"]] == [("rescue", at, 1, "failed"),
                                             ("rescue", at, 2, "failed")]


def test_a_second_restart_adds_its_own_after_the_first(host: FakeHost) -> None:
    c = completed(host)
    first = host.clock.now()
    c.restart("1", step="charge")
    host.advance(1000)
    second = host.clock.now()
    c.restart("1", from_position=1)
    host.advance(1000)
    charge = steps(host)[1]
    assert [(e["moved_at"], e["attempt"]) for e in charge["earlier"]] == [
        (first, 1), (first, 2), (first, 3), (second, 1)]


def test_only_a_position_of_the_same_name_shows_them(host: FakeHost) -> None:
    """Code that now reaches another step at the charge's number does not show the
    charge's attempts there; back at a charge, they are shown again."""
    name = {"second": "charge"}

    def wf(run: Run, _: Any) -> Any:
        run.step("reserve", lambda: 1)
        return run.step(name["second"], flaky("charge", 1), attempts=3, backoff_ms=10)

    c = completed(host, wf)
    c.restart("1", step="charge")
    name["second"] = "pay"
    host.advance(1000)
    (_, pay) = steps(host)
    assert (pay["name"], pay["earlier"], pay["earlier_more"]) == ("pay", [], 0)
    c.restart("1", step="pay")
    name["second"] = "charge"
    host.advance(1000)
    (_, charge) = steps(host)
    assert [e["attempt"] for e in charge["earlier"]] == [1, 2]


def test_a_cut_attempt_nobody_explained_is_kept_as_cut(host: FakeHost) -> None:
    def pack() -> str:
        TRIES["pack"] = TRIES.get("pack", 0) + 1
        if TRIES["pack"] == 1:
            raise Trap("killed")
        return "packed"

    host.serve("w", lambda run, _: run.step("pack", pack, attempts=3, backoff_ms=60_000))
    c = host.client("w")
    c.start("1")
    host.run_due()
    host.instance("w", "1").backend.trap_info = None  # a kill: the host kept no reason
    c.restart("1", step="pack")
    host.run_due()
    (packed,) = steps(host)
    assert [(e["attempt"], e["outcome"], e["ended_at"]) for e in packed["earlier"]] == [
        (1, "cut", None)]
    assert "attempt 1 ended without a result" in packed["earlier"][0]["error"]


def test_a_groups_branch_attempts_are_kept_with_their_names(host: FakeHost) -> None:
    def wf(run: Run, _: Any) -> Any:
        return run.all([Step("a", flaky("a", 1), attempts=2, backoff_ms=10),
                         Step("b", flaky("b", 0))])

    c = completed(host, wf)
    c.restart("1", from_position=0)
    host.advance(1000)
    (group,) = steps(host)
    assert [(e["branch"], e["name"], e["attempt"], e["outcome"]) for e in group["earlier"]
            ] == [(0, "a", 1, "failed"), (0, "a", 2, "returned"), (1, "b", 1, "returned")]


def test_the_table_is_bounded_dropping_the_oldest_first(host: FakeHost) -> None:
    n = earlier_attempts.MAX_ROWS + 5
    c = completed(host, lambda run, _: [run.step(f"s{i}", lambda: 1) for i in range(n)])
    c.restart("1", from_position=0)  # n attempts removed: the latest MAX_ROWS kept
    db = host.instance("w", "1").backend
    kept = f"SELECT count(*), min(pos), max(pos) FROM {earlier_attempts.TABLE}"
    assert db.rows(kept) == [(earlier_attempts.MAX_ROWS, 5, n - 1)]
    host.advance(1000)
    c.restart("1", from_position=n - 3)  # 3 more: the 3 oldest dropped
    assert db.rows(kept) == [(earlier_attempts.MAX_ROWS, 8, n - 1)]
    host.advance(1000)
    last = steps(host, **{"from": n - 1})[0]
    assert [e["attempt"] for e in last["earlier"]] == [1, 1]


def test_a_restart_from_the_start_keeps_none(host: FakeHost) -> None:
    c = completed(host)
    c.restart("1", step="charge")
    host.advance(1000)
    c.restart("1")  # a new run: its positions are new ones
    host.advance(1000)
    assert all(s["earlier"] == [] for s in steps(host))
    db = host.instance("w", "1").backend
    assert db.rows(f"SELECT count(*) FROM {earlier_attempts.TABLE}") == [(0,)]


def test_without_attempts_no_earlier_and_no_table_before_a_restart(host: FakeHost) -> None:
    completed(host)
    status, out = Raw(host, "w")("1", "steps", {})
    assert status == 200 and "earlier" not in out["steps"][0]
    assert [s["earlier"] for s in steps(host)] == [[], [], []]
    db = host.instance("w", "1").backend
    assert db.rows("SELECT count(*) FROM sqlite_master WHERE name = ?",
                   (earlier_attempts.TABLE,)) == [(0,)]


def test_a_continue_as_new_does_not_show_the_runs_before(host: FakeHost) -> None:
    """The next run numbers its positions anew: its 's' is not the restarted one."""
    def wf(run: Run, n: Any) -> Any:
        run.step("s", lambda: n)
        if n == 0:
            run.wait_for_event("go", 60_000)
            run.continue_as_new(1)
        return n

    host.serve("w", wf)
    c = host.client("w")
    c.start("1", 0)
    host.run_due()
    c.restart("1", step="s")
    host.run_due()
    assert [e["attempt"] for e in steps(host)[0]["earlier"]] == [1]
    c.send_event("1", "go", None)
    host.run_due()
    assert c.status("1").output == 1
    assert [s["earlier"] for s in steps(host)] == [[]]
