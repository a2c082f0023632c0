"""A step's own SQL, committed with its recorded result (`wf.step(name, f, tx=...)`):
the effect and the record together, an attempt that raises leaves no effect, a replay
never repeats it, and a trap or a power loss leaves both or neither."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from wkguest.workflow import Run, Tables, TxDb
from wkguest.workflow.testing import FakeBackend, FakeHost, Trap

LEDGER = Tables("""
    CREATE TABLE IF NOT EXISTS ledger (entry TEXT NOT NULL, amount INTEGER NOT NULL);
    CREATE INDEX IF NOT EXISTS ledger_entry ON ledger (entry)
""")


def booking(calls: Counter[str], entry: str, amount: int = 100,
            fail_first: int = 0, trap_first: int = 0) -> Any:
    """A tx step's function: books `entry` and answers the ledger's total. Its first
    `fail_first` calls raise after writing, the next `trap_first` trap after writing."""
    def f(db: TxDb) -> Any:
        calls[entry] += 1
        db.exec("/*app:effect*/ INSERT INTO ledger (entry, amount) VALUES (?, ?)",
                (entry, amount))
        if calls[entry] <= fail_first:
            raise RuntimeError(f"flaky {calls[entry]}")
        if calls[entry] <= fail_first + trap_first:
            raise Trap("the instance trapped after the write")
        return db.scalar("SELECT sum(amount) FROM ledger")
    return f


def ledger(backend: FakeBackend) -> Counter[str]:
    """How many times each entry was booked (none if the table is not there: an attempt
    rolled back takes the tables it made with it)."""
    if "ledger" not in _tables(backend):
        return Counter()
    return Counter(e for (e,) in backend.rows("SELECT entry FROM ledger"))


def records(backend: FakeBackend) -> dict[str, str]:
    """Each recorded position's kind, by name."""
    return {name: kind for name, kind in backend.rows("SELECT name, kind FROM _wk_wf_step")}


def attempt(backend: FakeBackend) -> tuple[Any, ...]:
    """The first position's (kind, attempts, error)."""
    return tuple(backend.rows("SELECT kind, attempts, error FROM _wk_wf_step WHERE pos = 0")[0])


def start(host: FakeHost, wf: Any) -> Any:
    host.serve("w", wf)
    c = host.client("w")
    c.start("1")
    host.run_due()
    return c


def test_the_effect_and_the_record_commit_together(any_host: FakeHost) -> None:
    calls: Counter[str] = Counter()

    def wf(run: Run, _: Any) -> Any:
        a = run.step("book a", booking(calls, "a", 100), tx=LEDGER)
        b = run.step("book b", booking(calls, "b", 20), tx=LEDGER)
        return [a, b]

    c = start(any_host, wf)
    s = c.status("1")
    assert s.state == "completed" and s.output == [100, 120], s
    b = any_host.instance("w", "1").backend
    assert ledger(b) == {"a": 1, "b": 1}
    assert records(b) == {"book a": "S", "book b": "S"}
    assert calls == {"a": 1, "b": 1}


def test_a_replay_never_runs_the_function_again(any_host: FakeHost) -> None:
    """Many events replay the step (always-replay: a fresh runner in each); the effect
    is there once, and the recorded value comes back each time."""
    calls: Counter[str] = Counter()
    seen: list[Any] = []

    def wf(run: Run, _: Any) -> Any:
        seen.append(run.step("book", booking(calls, "a"), tx=LEDGER))
        for i in range(3):
            run.sleep(f"nap {i}", 1000)
        return seen[-1]

    c = start(any_host, wf)
    for _ in range(3):
        any_host.advance(1000)
    assert c.status("1").output == 100
    assert calls == {"a": 1}
    assert seen == [100] * 4
    assert ledger(any_host.instance("w", "1").backend) == {"a": 1}


def test_a_failing_attempt_leaves_no_effect_and_is_retried(any_host: FakeHost) -> None:
    calls: Counter[str] = Counter()

    def wf(run: Run, _: Any) -> Any:
        return run.step("book", booking(calls, "a", fail_first=2), tx=LEDGER,
                        backoff_ms=1000)

    c = start(any_host, wf)
    b = any_host.instance("w", "1").backend
    assert attempt(b) == ("p", 1, "RuntimeError: flaky 1")
    assert ledger(b) == {}  # the attempt's insert was rolled back with it
    any_host.advance(1000)
    assert ledger(b) == {}
    any_host.advance(2000)  # the backoff doubles
    s = c.status("1")
    assert s.state == "completed" and s.output == 100, s
    assert ledger(b) == {"a": 1} and calls == {"a": 3}


def test_out_of_attempts_the_step_fails_with_no_effect(any_host: FakeHost) -> None:
    calls: Counter[str] = Counter()

    def wf(run: Run, _: Any) -> Any:
        r = run.try_step("book", booking(calls, "a", fail_first=9), tx=True, attempts=2,
                         backoff_ms=0)
        return [r.ok, r.error, r.attempts]

    c = start(any_host, _with_table(wf))
    any_host.run_due()
    assert c.status("1").output == [False, "RuntimeError: flaky 2", 2]
    assert ledger(any_host.instance("w", "1").backend) == {}


def _with_table(wf: Any) -> Any:
    """`wf` after a tx step that makes the ledger (for steps given tx=True)."""
    def with_table(run: Run, inp: Any) -> Any:
        run.step("tables", lambda db: None, tx=LEDGER)
        return wf(run, inp)
    return with_table


def test_a_result_that_cannot_be_recorded_rolls_the_effect_back(host: FakeHost) -> None:
    def f(db: TxDb) -> Any:
        db.exec("INSERT INTO ledger VALUES ('a', 1)")
        return {1, 2}  # a set: not a recordable value

    c = start(host, _with_table(lambda run, _: run.try_step("book", f, tx=True).error))
    assert "set" in (c.status("1").output or ""), c.status("1")
    assert ledger(host.instance("w", "1").backend) == {}


def test_a_trap_inside_the_function_leaves_neither(any_host: FakeHost) -> None:
    calls: Counter[str] = Counter()

    def wf(run: Run, _: Any) -> Any:
        return run.step("book", booking(calls, "a", trap_first=1), tx=LEDGER)

    c = start(any_host, wf)
    b = any_host.instance("w", "1").backend
    assert any_host.traps == 1 and ledger(b) == {}
    assert attempt(b)[:2] == ("p", 1)  # counted before f ran
    any_host.advance(1000)  # the watchdog alarm brings the next attempt
    assert c.status("1").output == 100
    assert ledger(b) == {"a": 1} and calls == {"a": 2}


def test_a_trap_after_the_commit_keeps_both_and_replay_does_not_repeat(
        any_host: FakeHost) -> None:
    calls: Counter[str] = Counter()
    traps = Counter[str]()

    def after(_: Any = None) -> Any:
        traps["t"] += 1
        if traps["t"] == 1:
            raise Trap("the next step traps")
        return "ok"

    def wf(run: Run, _: Any) -> Any:
        total = run.step("book", booking(calls, "a"), tx=LEDGER)
        run.step("next", after)
        return total

    c = start(any_host, wf)
    b = any_host.instance("w", "1").backend
    assert any_host.traps == 1
    assert ledger(b) == {"a": 1} and records(b)["book"] == "S"
    any_host.advance(1000)
    assert c.status("1").output == 100
    assert ledger(b) == {"a": 1} and calls == {"a": 1}


@pytest.mark.parametrize("synced", [False, True], ids=["before-the-sync", "after-the-sync"])
def test_a_power_loss_loses_both_or_neither(host: FakeHost, synced: bool) -> None:
    """The COMMIT is a plain one: the run's durable write syncs the effect with the
    record (group commit), so a power loss before it loses both, never one."""
    calls: Counter[str] = Counter()
    cut: Counter[str] = Counter()

    def wf(run: Run, _: Any) -> Any:
        total = run.step("book", booking(calls, "a"), tx=LEDGER)
        if not synced and not cut["trap"]:
            cut["trap"] += 1
            raise Trap("the event ends before the run's durable write")
        run.sleep("nap", 1000)  # a durable write: the sleep's wake time
        return total

    c = start(host, wf)
    inst = host.instance("w", "1")
    assert ledger(inst.backend) == {"a": 1} and "book" in records(inst.backend)
    inst.backend.power_loss()
    inst.runner.forget()  # the process went down with the power
    assert ledger(inst.backend) == ({"a": 1} if synced else {})
    assert ("book" in records(inst.backend)) == synced
    host.advance(1000)
    host.advance(1000)
    assert c.status("1").output == 100
    assert ledger(inst.backend) == {"a": 1}
    assert calls == {"a": 1 if synced else 2}


def _tables(backend: FakeBackend) -> set[str]:
    return {n for (n,) in backend.rows("SELECT name FROM sqlite_master WHERE type = 'table'")}


def test_the_tables_are_made_by_the_first_tx_step_and_added_later(host: FakeHost) -> None:
    """Tables run inside the step's transaction; an instance started before a deploy
    that adds a table gets it at its next tx step (the statements are idempotent)."""
    def first(run: Run, _: Any) -> Any:
        run.step("book", booking(Counter(), "a"), tx=LEDGER)
        run.sleep("nap", 1000)
        return run.step("audit", _audit, tx=Tables(
            "CREATE TABLE IF NOT EXISTS audit (what TEXT)", *LEDGER.statements))

    c = start(host, first)
    b = host.instance("w", "1").backend
    assert "ledger" in _tables(b) and "audit" not in _tables(b)
    host.advance(1000)
    assert c.status("1").output == [["a"]]
    assert b.rows("SELECT what FROM audit") == [("a",)]


def _audit(db: TxDb) -> Any:
    db.exec("INSERT INTO audit SELECT entry FROM ledger")
    return db.query("SELECT what FROM audit")


def test_an_sql_error_fails_the_attempt_even_if_caught(host: FakeHost) -> None:
    """After a failed statement the attempt is rolled back whatever the function does:
    SQLite may have ended the transaction on some errors."""
    def f(db: TxDb) -> Any:
        db.exec("INSERT INTO ledger VALUES ('a', 1)")
        try:
            db.exec("INSERT INTO nowhere VALUES (1)")
        except Exception as e:
            caught.append(type(e).__name__)
        return "went on"

    caught: list[str] = []
    c = start(host, _with_table(lambda run, _: run.try_step("book", f, tx=True,
                                                            attempts=1).error))
    assert caught == ["SqliteError"]
    assert "no such table: nowhere" in (c.status("1").output or ""), c.status("1")
    assert ledger(host.instance("w", "1").backend) == {}
