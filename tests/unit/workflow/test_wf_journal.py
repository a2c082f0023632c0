"""The journal: one query in position order on both SQLites, the warm cache and its
deltas, entries this runner cannot read, and the benchmark helper (no timing asserts)."""

from __future__ import annotations

import json
import random
from typing import Any

import apsw
import pytest
from wkguest.workflow import Config, Run
from wkguest.workflow.runner import Runner
from wkguest.workflow.store import _LOAD, SCHEMA, Loaded, Store
from wkguest.workflow.testing import FakeBackend, FakeHost, bench_replay
from wkguest.workflow.testing.bench import recorded_backend


def _fill(execute: Any, n: int) -> None:
    for sql in SCHEMA:
        execute(sql, ())
    execute("INSERT INTO _wk_wf (id, state, run_id, input, input_tagged, created_at, "
            "updated_at) VALUES (1, 'running', 'r', 'null', 0, 0, 0)", ())
    order = list(range(n))
    random.Random(7).shuffle(order)  # rows inserted out of order: pages split, rowids mixed
    for pos in order:
        execute("INSERT INTO _wk_wf_step (pos, kind, name, result, updated_at) "
                "VALUES (?, 'S', ?, ?, 0)", (pos, f"n{pos}", json.dumps(pos)))
    execute("INSERT INTO _wk_wf_step (pos, kind, name, wake_at, updated_at) "
            "VALUES (?, 'w', 'tail', 5, 0)", (n,))


@pytest.mark.parametrize("engine", ["sqlite3", "apsw"])
def test_load_returns_positions_in_order(engine: str) -> None:
    n = 3000
    if engine == "apsw":  # the host's SQLite (3.54 here), not the stdlib's (3.40)
        conn = apsw.Connection(":memory:")
        _fill(lambda sql, p: conn.execute(sql, p), n)
        row = list(conn.execute(_LOAD, (0, "r")))[0]
    else:
        b = FakeBackend()
        _fill(lambda sql, p: b.conn.execute(sql, p), n)
        row = b.rows(_LOAD, (0, "r"))[0]
    count, kinds, names, results, pending = row[10:15]
    assert count == n and kinds == "S" * n
    assert names.split("\x1e") == [f"n{i}" for i in range(n)]
    assert json.loads(results) == list(range(n))
    assert json.loads(pending) == [n, "w", "tail", 0, None, 5, None]
    if engine == "sqlite3":
        tail = b.rows(_LOAD, (n - 2, "r"))[0]
        assert (tail[10], json.loads(tail[13])) == (2, [n - 2, n - 1])
        assert b.rows(_LOAD, (n - 2, "other run"))[0][10] == n  # another run: from 0


def test_a_warm_instance_fetches_only_new_positions(host: FakeHost) -> None:
    def wf(run: Run, _: Any) -> Any:
        for i in range(4):
            run.step(f"s{i}", lambda i=i: i)
            run.sleep(f"z{i}", 10)
        return "done"

    host.serve("w", wf)
    c = host.client("w")
    c.start("1")
    inst = host.instance("w", "1")
    counts: list[int] = []
    load = inst.runner.store.load

    def spy(since: int, run_id: str) -> Loaded | None:
        got = load(since, run_id)
        counts.append(-1 if got is None else got.count)
        return got

    inst.runner.store.load = spy  # type: ignore[method-assign]
    for _ in range(6):
        host.advance(10)
    assert c.status("1").output == "done"
    assert counts == [0] * len(counts)  # every position was recorded by this warm runner
    inst.runner.forget()  # a cold instance loads everything once, then deltas again
    assert inst.runner.journal is None


def test_cold_then_warm_loads(host: FakeHost) -> None:
    b = recorded_backend(50)
    runner = Runner(_replay_50, Config(), b)
    seen: list[int] = []
    load = runner.store.load
    runner.store.load = lambda s, r: _note(seen, load(s, r))  # type: ignore[method-assign]
    runner.on_alarm()
    runner.on_alarm()
    b.conn.execute("UPDATE _wk_wf_step SET kind = 'Z', result = 'null' WHERE pos = 50")
    runner.on_alarm()
    assert seen == [50, 0, 1]


def _replay_50(run: Run, _: Any) -> Any:
    for _ in range(50):
        run.step("charge-card", lambda: 1 / 0)
    run.sleep("end", 10**15)
    return "woke"


def _note(seen: list[int], got: Loaded | None) -> Loaded | None:
    seen.append(-1 if got is None else got.count)
    return got


def test_a_new_run_id_drops_the_cache() -> None:
    b = FakeBackend()
    runner = Runner(lambda run, inp: [run.step("a", lambda: inp), run.sleep("z", 10)], Config(),
                    b)
    store = Store(b)
    store.init_schema()
    store.create("run-1", '"one"', False, b.clock.now())
    runner.on_alarm()
    assert runner.journal is not None and runner.journal.results == ["one"]
    # as after retention: the actor's tables are gone and a new start wrote a new run
    b.conn.execute("DELETE FROM _wk_wf")
    b.conn.execute("DELETE FROM _wk_wf_step")
    store.create("run-2", '"two"', False, b.clock.now())
    runner.on_alarm()
    assert runner.journal.run_id == "run-2" and runner.journal.results == ["two"]


def test_an_entry_kind_this_runner_does_not_know_is_retried_then_fails(host: FakeHost) -> None:
    host.serve("w", lambda run, _: [run.step("a", lambda: 1), run.sleep("z", 10)],
               Config(attempts=1))
    c = host.client("w")
    c.start("1")
    host.run_due()
    b = host.instance("w", "1").backend
    b.conn.execute("UPDATE _wk_wf_step SET kind = 'Y' WHERE pos = 0")
    host.instance("w", "1").runner.forget()
    host.advance(10)
    s = c.status("1")
    assert s.state == "waiting"
    assert "position 0 holds a journal entry of kind 'Y'" in (s.error or "")
    host.advance(1000)
    s = c.status("1")
    assert s.state == "failed" and "kind 'Y'" in (s.error or "")
    assert "2 runs in a row" in (s.error or "")


@pytest.mark.parametrize("warm", [True, False])
@pytest.mark.parametrize("shape", ["dict", "str"])
def test_bench_helper_runs(warm: bool, shape: str) -> None:
    r = bench_replay(100, warm=warm, shape=shape, repeat=2)
    assert r.n == 100 and r.warm is warm and r.shape == shape
    assert r.total_us > 0 and r.guest_us > 0
