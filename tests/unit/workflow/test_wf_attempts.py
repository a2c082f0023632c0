"""Each attempt's history on the steps route (`attempts: true`): its start and end on the
host's clock, its duration, outcome, error, fuel and memory grown; a cut attempt's reason;
step branches of a group; values on request, cut at `value_bytes`."""

from __future__ import annotations

from typing import Any

import pytest
from wkguest.workflow import Config, Run, Step, Tables
from wkguest.workflow.testing import FakeHost, Trap


def steps(host: FakeHost, raw: Any, id: str = "1", **msg: Any) -> list[dict[str, Any]]:
    status, out = raw("w")(id, "steps", msg)
    assert status == 200, out
    return list(out["steps"])


@pytest.fixture
def raw_any(any_host: FakeHost) -> Any:
    from .conftest import Raw
    return lambda cls: Raw(any_host, cls)


def test_each_attempt_has_its_times_outcome_error_and_fuel(any_host: FakeHost,
                                                           raw_any: Any) -> None:
    tries = {"n": 0}

    def flaky() -> str:
        b = any_host.instance("w", "1").backend
        b.fuel += 1000 * (tries["n"] + 1)  # what the attempt burns
        b.memory = (b.memory or 0) + 65536  # and the memory it grows
        any_host.clock.jump(7)  # the attempt takes 7 ms of host time
        tries["n"] += 1
        if tries["n"] < 3:
            raise ConnectionError(f"refused {tries['n']}")
        return "ok"

    def wf(run: Run, _: Any) -> Any:
        return run.step("charge", flaky, attempts=5, backoff_ms=100)

    any_host.serve("w", wf)
    c = any_host.client("w")
    c.start("1")
    any_host.instance("w", "1").backend.memory = 131072  # the size before the first
    for _ in range(5):
        any_host.advance(1000)
    assert c.status("1").output == "ok"
    st = steps(any_host, raw_any, attempts=True)[0]
    h = st["history"]
    assert [(a["attempt"], a["outcome"], a["error"]) for a in h] == [
        (1, "failed", "ConnectionError: refused 1"),
        (2, "failed", "ConnectionError: refused 2"),
        (3, "returned", None)]
    assert [a["duration_ms"] for a in h] == [7, 7, 7]
    assert all(a["ended_at"] - a["started_at"] == 7 for a in h)
    assert h[0]["ended_at"] < h[1]["started_at"] < h[2]["started_at"]
    assert [a["fuel"] for a in h] == [1000, 2000, 3000]
    assert [a["memory_grown"] for a in h] == [65536, 65536, 65536]
    assert {a["branch"] for a in h} == {None} and st["history_more"] == 0


def test_an_attempt_cut_by_a_trap_shows_its_reason_before_and_after_the_next(
        any_host: FakeHost, raw_any: Any) -> None:
    tries = {"n": 0}

    def f() -> int:
        tries["n"] += 1
        if tries["n"] == 1:
            raise Trap("out of fuel")
        return 5

    def wf(run: Run, _: Any) -> Any:
        return run.step("pack", f, attempts=3, backoff_ms=5000)

    any_host.serve("w", wf)
    c = any_host.client("w")
    c.start("1")
    any_host.run_due()  # the first attempt traps
    assert c.status("1").state == "running"  # the status notes the cut
    (cut,) = steps(any_host, raw_any, attempts=True)[0]["history"]
    assert (cut["attempt"], cut["outcome"], cut["ended_at"], cut["duration_ms"]) == (
        1, "cut", None, None)
    assert cut["error"] == "guest trapped: Trap: out of fuel"
    any_host.advance(5000)
    assert c.status("1").output == 5
    h = steps(any_host, raw_any, attempts=True)[0]["history"]
    assert [(a["attempt"], a["outcome"], a["error"]) for a in h] == [
        (1, "cut", "guest trapped: Trap: out of fuel"), (2, "returned", None)]


def test_a_step_that_gives_up_on_a_cut_keeps_every_attempt(any_host: FakeHost,
                                                           raw_any: Any) -> None:
    def wf(run: Run, _: Any) -> Any:
        return run.try_step("s", lambda: (_ for _ in ()).throw(Trap("boom")),
                            attempts=2, backoff_ms=10).error

    any_host.serve("w", wf)
    c = any_host.client("w")
    c.start("1")
    for _ in range(10):
        any_host.advance(1000)
    assert "attempt 2 was cut" in (c.status("1").output or "")
    h = steps(any_host, raw_any, attempts=True)[0]["history"]
    assert [(a["attempt"], a["outcome"]) for a in h] == [(1, "cut"), (2, "cut")]
    assert all(a["error"] == "guest trapped: Trap: boom" for a in h), h


def test_step_branches_of_a_group_each_have_their_attempts(any_host: FakeHost,
                                                          raw_any: Any) -> None:
    tries = {"n": 0}

    def flaky() -> int:
        tries["n"] += 1
        if tries["n"] == 1:
            raise ValueError("not yet")
        if tries["n"] == 2:
            raise Trap("cut in a branch")
        return 2

    def wf(run: Run, _: Any) -> Any:
        return run.all([Step("a", lambda: 1), Step("b", flaky, attempts=4, backoff_ms=50)])

    any_host.serve("w", wf)
    c = any_host.client("w")
    c.start("1")
    for _ in range(5):
        any_host.advance(1000)
    assert c.status("1").output == [1, 2]
    h = steps(any_host, raw_any, attempts=True)[0]["history"]
    assert [(a["branch"], a["name"], a["attempt"], a["outcome"], a["error"]) for a in h] == [
        (0, "a", 1, "returned", None),
        (1, "b", 1, "failed", "ValueError: not yet"),
        (1, "b", 2, "cut", "guest trapped: Trap: cut in a branch"),
        (1, "b", 3, "returned", None)]


def test_a_tx_step_records_its_rolled_back_attempt_and_its_commit(any_host: FakeHost,
                                                                 raw_any: Any) -> None:
    table = Tables("CREATE TABLE IF NOT EXISTS t (x INTEGER)")
    tries = {"n": 0}

    def book(db: Any) -> int:
        db.exec("INSERT INTO t VALUES (1)")
        tries["n"] += 1
        if tries["n"] == 1:
            raise RuntimeError("rolled back")
        return int(db.scalar("SELECT count(*) FROM t"))

    def wf(run: Run, _: Any) -> Any:
        return run.step("book", book, tx=table, backoff_ms=10)

    any_host.serve("w", wf)
    c = any_host.client("w")
    c.start("1")
    for _ in range(3):
        any_host.advance(1000)
    assert c.status("1").output == 1
    h = steps(any_host, raw_any, attempts=True)[0]["history"]
    assert [(a["attempt"], a["outcome"]) for a in h] == [(1, "failed"), (2, "returned")]


def test_values_on_request_cut_at_value_bytes(any_host: FakeHost, raw_any: Any) -> None:
    def wf(run: Run, _: Any) -> Any:
        run.step("small", lambda: {"n": 1})
        run.step("big", lambda: "é" * 300)
        run.sleep("nap", 10)
        return 1

    any_host.serve("w", wf)
    c = any_host.client("w")
    c.start("1")
    any_host.run_due()
    any_host.advance(1000)
    assert c.status("1").state == "completed"
    plain = steps(any_host, raw_any)
    assert "value" not in plain[0] and "history" not in plain[0]
    small, big, nap = steps(any_host, raw_any, values=True)
    assert (small["value"], small["value_truncated"]) == ('{"n":1}', False)
    assert big["value_truncated"] is True
    assert len(big["value"].encode()) <= 200 and big["value"] == '"' + "é" * 99
    assert (nap["value"], nap["value_truncated"]) == ("null", False)
    (_, big, _) = steps(any_host, raw_any, values=True, value_bytes=1000)
    assert (big["value"], big["value_truncated"]) == ('"' + "é" * 300 + '"', False)


def test_no_attempt_yet_no_table_and_an_empty_history(any_host: FakeHost,
                                                     raw_any: Any) -> None:
    def wf(run: Run, _: Any) -> Any:
        run.sleep("nap", 10)
        return run.wait_for_event("go", 60_000)

    any_host.serve("w", wf)
    any_host.client("w").start("1")
    any_host.run_due()
    any_host.advance(100)
    got = steps(any_host, raw_any, attempts=True, values=True)
    assert [(s["kind"], s["history"], s["history_more"]) for s in got] == [
        ("sleep", [], 0), ("wait", [], 0)]
    assert got[1]["value"] is None


def test_continue_as_new_forgets_the_old_runs_attempts(any_host: FakeHost,
                                                      raw_any: Any) -> None:
    def wf(run: Run, n: Any) -> Any:
        run.step("s", lambda: n)
        if n < 2:
            run.continue_as_new(n + 1)
        return n

    any_host.serve("w", wf)
    c = any_host.client("w")
    c.start("1", 0)
    for _ in range(5):
        any_host.advance(1000)
    assert c.status("1").output == 2
    (s,) = steps(any_host, raw_any, attempts=True)
    assert [a["attempt"] for a in s["history"]] == [1]


def test_history_keeps_a_positions_latest_attempts(host: FakeHost, raw: Any) -> None:
    from wkguest.workflow.core import attempt_history as attempts
    n = attempts.MAX_HISTORY + 3

    def wf(run: Run, _: Any) -> Any:
        return run.try_step("s", lambda: 1 / 0, attempts=n, backoff_ms=1,
                            max_backoff_ms=1).attempts

    host.serve("w", wf, Config(run_budget_ms=10**9))
    c = host.client("w")
    c.start("1")
    for _ in range(n + 5):
        host.advance(10)
    assert c.status("1").output == n
    (s,) = steps(host, raw, attempts=True)
    assert [a["attempt"] for a in s["history"]] == list(range(4, n + 1))
    assert s["history_more"] == 3


@pytest.mark.parametrize("msg, word", [({"attempts": 1}, "'attempts'"),
                                       ({"values": "yes"}, "'values'"),
                                       ({"value_bytes": 0}, "'value_bytes'"),
                                       ({"value_bytes": 5000}, "'value_bytes'")])
def test_bad_options_are_refused_naming_them(host: FakeHost, raw: Any, msg: Any,
                                            word: str) -> None:
    host.serve("w", lambda run, _: run.step("s", lambda: 1))
    host.client("w").start("1")
    host.run_due()
    status, out = raw("w")("1", "steps", msg)
    assert status == 400 and word in str(out), out


def test_a_new_step_costs_four_host_calls_its_history_row_riding_with_its_record(
        host: FakeHost) -> None:
    """A step's attempt crosses to the host four times: its count (exec), the clock
    before it runs (now), its end (now_and_fuel), and its record with its history row
    after it in one script (exec_many, one exec: the host runs it in one call). Its two
    samples (its time, its attempts: core/counted.py) cross with the event's others, in
    one call at the event's end (wkguest.metrics)."""
    def per_step(n: int) -> dict[str, int]:
        host.serve("w", lambda run, _: [run.step(f"s{i}", lambda i=i: i) for i in range(n)])
        host.client("w").start(f"n{n}")
        host.run_due()
        return dict(host.instance("w", f"n{n}").backend.calls)

    small, big = per_step(2), per_step(12)
    grown = {k: (big.get(k, 0) - small.get(k, 0)) / 10 for k in big}
    assert {k: v for k, v in grown.items() if v} == {"exec": 2, "now": 1, "now_and_fuel": 1,
                                                     "observe": 2}
    b = host.instance("w", "n12").backend
    assert b.rows("SELECT count(*) FROM _wk_wf_attempt")[0][0] == 12
