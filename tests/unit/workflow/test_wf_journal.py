"""The journal: one query in position order on both SQLites, the warm cache and its
deltas, entries this runner cannot read, and the benchmark helper (no timing asserts)."""

from __future__ import annotations

import json
import random
from typing import Any

import apsw
import pytest
from wkguest.workflow import Config, Run
from wkguest.workflow.core.instance import Loaded
from wkguest.workflow.core.kinds import Pending
from wkguest.workflow.core.schema import SCHEMA
from wkguest.workflow.core.store import Store
from wkguest.workflow.runner import Runner
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


class _ApswRows:
    """Just enough of a Backend for Store.load on the host's SQLite."""

    def __init__(self, conn: apsw.Connection) -> None:
        self.conn = conn

    def query_row(self, sql: str, params: Any = ()) -> tuple[Any, ...] | None:
        rows = list(self.conn.execute(sql, params))
        return rows[0] if rows else None


@pytest.mark.parametrize("engine", ["sqlite3", "apsw"])
def test_load_returns_positions_in_order(engine: str) -> None:
    n = 3000
    if engine == "apsw":  # the host's SQLite (3.54 here), not the stdlib's (3.40)
        conn = apsw.Connection(":memory:")
        _fill(lambda sql, p: conn.execute(sql, p), n)
        store = Store(_ApswRows(conn))  # type: ignore[arg-type]
        store.current = True  # _fill made today's tables: nothing to migrate
    else:
        b = FakeBackend()
        _fill(lambda sql, p: b.conn.execute(sql, p), n)
        store = Store(b)
    got = store.load(0, "r")
    assert got is not None
    assert (got.state, got.run_id, got.input, got.since) == ("running", "r", None, 0)
    assert got.count == n and got.kinds == "S" * n
    assert got.keys.split("\x1e") == [f"n{i}" for i in range(n)]
    assert json.loads(got.results) == list(range(n))
    assert got.pending == Pending(n, "w", "tail", 0, None, 5, None)
    tail = store.load(n - 2, "r")
    assert tail is not None and (tail.since, tail.count) == (n - 2, 2)
    assert json.loads(tail.results) == [n - 2, n - 1]
    other = store.load(n - 2, "other run")  # another run: from 0, with its input
    assert other is not None and (other.since, other.count, other.input) == (0, n, "null")


def test_a_load_keeps_text_that_json_escapes_intact() -> None:
    """Names and results cross as typed text, not inside JSON: quotes, backslashes and
    non-ASCII survive, and an error with a newline comes back as written."""
    b = FakeBackend()
    for sql in SCHEMA:
        b.conn.execute(sql)
    b.conn.execute("INSERT INTO _wk_wf (id, state, run_id, input, input_tagged, created_at, "
                   "updated_at, error) VALUES (1, 'running', 'r', ?, 0, 0, 0, ?)",
                   (json.dumps({"q": '"\\'}), 'line 1\nline "2"'))
    names = ['say "hi"', "back\\slash", "naïve ☃"]
    for pos, name in enumerate(names):
        b.conn.execute("INSERT INTO _wk_wf_step (pos, kind, name, result, updated_at) "
                       "VALUES (?, 'S', ?, ?, 0)", (pos, name, json.dumps({name: name})))
    got = Store(b).load(0, "")
    assert got is not None and got.error == 'line 1\nline "2"'
    assert json.loads(got.input or "") == {"q": '"\\'}
    assert got.keys.split("\x1e") == names
    assert json.loads(got.results) == [{n: n} for n in names]
    assert got.pending is None


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


def test_an_entry_kind_this_runner_does_not_know_parks_the_instance(host: FakeHost) -> None:
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
    assert s.state == "parked"
    assert "position 0 holds a journal entry of kind 'Y'" in (s.error or "")


def test_an_entry_the_warm_cache_cannot_read_is_read_again_from_the_database(
        host: FakeHost) -> None:
    """Only the history read fresh parks: a warm cache that went wrong is dropped, and
    the next run (after a bad run's backoff) reads the journal again."""
    host.serve("w", lambda run, _: [run.step("a", lambda: 1), run.sleep("z", 10)])
    c = host.client("w")
    c.start("1")
    host.run_due()
    runner = host.instance("w", "1").runner
    assert runner.journal is not None
    runner.journal.kinds[0], runner.journal.keys[0] = "Y", "\x01a"  # the cache only
    host.advance(10)
    s = c.status("1")
    assert s.state == "waiting" and "kind 'Y'" in (s.error or ""), s  # a bad run
    host.advance(1000)
    s = c.status("1")
    assert (s.state, s.output, s.error) == ("completed", [1, None], None)


@pytest.mark.parametrize("warm", [True, False])
@pytest.mark.parametrize("shape", ["dict", "str"])
def test_bench_helper_runs(warm: bool, shape: str) -> None:
    r = bench_replay(100, warm=warm, shape=shape, repeat=2)
    assert r.n == 100 and r.warm is warm and r.shape == shape
    assert r.total_us > 0 and r.guest_us > 0
