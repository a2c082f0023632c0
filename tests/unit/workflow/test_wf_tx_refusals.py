"""What a tx step's handle refuses (TxRefused: the instance parks, naming the step, and
the attempt's writes are rolled back), the option's mistakes, `Tables`' checks, and the
statement scanner behind them."""

from __future__ import annotations

from typing import Any

import pytest
from wkguest.workflow import Run, Tables, TxDb, TxRefused
from wkguest.workflow.core.sqlscan import refusal, statements
from wkguest.workflow.testing import FakeHost

from .test_wf_tx import LEDGER, ledger, start

REFUSED = [
    ("SELECT * FROM _wk_wf_step", "names _wk_... tables"),
    ("UPDATE _WK_WF SET state = 'completed'", "names _wk_... tables"),
    ("DELETE FROM \"_wk_wf_event\"", "names _wk_... tables"),
    ("SELECT at_ms FROM _wk_host_alarm", "names _wk_... tables"),
    ("COMMIT", "COMMIT is refused"),
    ("/* a comment */ rollback", "ROLLBACK is refused"),
    ("BEGIN", "BEGIN is refused"),
    ("END TRANSACTION", "END is refused"),
    ("SAVEPOINT s", "SAVEPOINT is refused"),
    ("RELEASE _wk_tx", "RELEASE is refused"),
    ("INSERT INTO ledger VALUES ('b', 1); COMMIT", "one statement per call"),
    ("-- nothing", "holds no statement"),
]


@pytest.mark.parametrize("sql, why", REFUSED)
def test_the_handle_refuses_and_the_instance_parks(any_host: FakeHost, sql: str,
                                                   why: str) -> None:
    def f(db: TxDb) -> Any:
        db.exec("INSERT INTO ledger VALUES ('a', 1)")
        try:
            db.exec(sql)
        except Exception:  # TxRefused is a signal: this cannot swallow it
            return "swallowed"
        return "went on"

    c = start(any_host, lambda run, _: run.step("book", f, tx=LEDGER))
    s = c.status("1")
    assert s.state == "parked", s
    assert "wf.step('book', tx=...)" in (s.error or "") and why in (s.error or ""), s.error
    assert ledger(any_host.instance("w", "1").backend) == {}  # rolled back


def test_the_handle_refuses_use_after_its_function_returned(host: FakeHost) -> None:
    kept: list[TxDb] = []

    def wf(run: Run, _: Any) -> Any:
        run.step("book", lambda db: kept.append(db), tx=LEDGER)
        return run.step("later", lambda: kept[0].exec("INSERT INTO ledger VALUES ('x', 1)"))

    c = start(host, wf)
    s = c.status("1")
    assert s.state == "parked" and "after its step's function returned" in (s.error or "")
    assert ledger(host.instance("w", "1").backend) == {}


def test_a_commit_that_bypasses_the_handle_is_caught_before_the_record(
        host: FakeHost) -> None:
    """A COMMIT through the actor's database directly (wkguest.sqlite in a guest) ends
    the runner's transaction: the check before the record sees it, and nothing is
    recorded for the step."""
    def f(db: TxDb) -> Any:
        db.exec("INSERT INTO ledger VALUES ('a', 1)")
        host.instance("w", "1").backend.exec("COMMIT")
        return "done"

    c = start(host, lambda run, _: run.step("book", f, tx=LEDGER))
    s = c.status("1")
    assert s.state == "parked" and "its transaction was ended inside the function" in (
        s.error or ""), s
    b = host.instance("w", "1").backend
    assert b.rows("SELECT kind FROM _wk_wf_step") == [("p",)]  # no result recorded


@pytest.mark.parametrize("call, named", [
    (lambda run: run.step("book", lambda db: 1, tx="yes"),
     "step option 'tx' must be True, False or a workflow.Tables"),
    (lambda run: run.step("book", lambda db: 1, tx=1),
     "step option 'tx' must be True, False or a workflow.Tables"),
    (lambda run: run.step_keyed("book", lambda key: 1, tx=True),
     "'tx' does not go with step_keyed"),
])
def test_a_mistake_in_the_option_parks(host: FakeHost, call: Any, named: str) -> None:
    c = start(host, lambda run, _: call(run))
    s = c.status("1")
    assert s.state == "parked" and named in (s.error or ""), s


def test_primitives_are_refused_inside_a_tx_step(host: FakeHost) -> None:
    def wf(run: Run, _: Any) -> Any:
        def f(db: TxDb) -> Any:
            db.exec("INSERT INTO ledger VALUES ('a', 1)")
            return run.step("inner", lambda: 1)
        return run.try_step("book", f, tx=LEDGER).error

    c = start(host, wf)
    assert "cannot be called inside a step's function" in (c.status("1").output or "")
    assert ledger(host.instance("w", "1").backend) == {}


@pytest.mark.parametrize("schema, why", [
    ("CREATE TABLE t (x)", "only CREATE TABLE|INDEX|VIEW|TRIGGER IF NOT EXISTS"),
    ("CREATE TABLE IF NOT EXISTS t (x); DROP TABLE u", "'DROP TABLE u'"),
    ("CREATE TEMP TABLE IF NOT EXISTS t (x)", "only CREATE"),
    ("INSERT INTO t VALUES (1)", "only CREATE"),
    ("CREATE TABLE IF NOT EXISTS _wk_wf_mine (x)", "names _wk_ tables"),
    ("CREATE INDEX IF NOT EXISTS i ON _wk_wf_step (name)", "names _wk_ tables"),
])
def test_tables_take_only_idempotent_creates_of_the_instance_own(schema: str,
                                                                 why: str) -> None:
    with pytest.raises(ValueError, match="workflow.Tables") as e:
        Tables(schema)
    assert why in str(e.value)


def test_tables_split_their_scripts_as_sqlite_does() -> None:
    t = Tables("""
        CREATE TABLE IF NOT EXISTS a (x TEXT DEFAULT ';');  -- a comment; with a ;
        CREATE UNIQUE INDEX IF NOT EXISTS a_x ON a (x);
        CREATE TRIGGER IF NOT EXISTS a_t AFTER INSERT ON a BEGIN
            UPDATE a SET x = x || '!' WHERE rowid = NEW.rowid;
        END;
        CREATE VIEW IF NOT EXISTS v AS SELECT x FROM a
    """, "CREATE TABLE IF NOT EXISTS b (y)")
    assert len(t.statements) == 5
    assert t == Tables(*t.statements) and hash(t) == hash(Tables(*t.statements))
    assert t.statements[2].endswith("END")


def test_the_scanner_keeps_quotes_and_comments_whole() -> None:
    assert [text for text, _ in statements("SELECT ';' ; /* ; */ SELECT \"a;b\" -- ;")] == [
        "SELECT ';'", "/* ; */ SELECT \"a;b\" -- ;"]
    assert refusal("INSERT INTO t VALUES ('COMMIT; _x')") is None
    assert refusal("SELECT 1 /* _wk_wf */") is None  # a comment names nothing
    assert refusal("SELECT '_wk_wf'") is not None  # a string may stand for a name
    assert refusal("SELECT [x;y] FROM `t;u`") is None
    assert refusal("SELECT 'unterminated ; COMMIT") is None  # one (broken) statement
    assert "one statement" in (refusal("SELECT 1; SELECT 2") or "")
    assert refusal("WITH c AS (SELECT 1) INSERT INTO t SELECT * FROM c") is None


def test_tx_refused_is_a_code_error() -> None:
    from wkguest.workflow import CodeError, WorkflowSignal
    assert issubclass(TxRefused, CodeError) and issubclass(TxRefused, WorkflowSignal)
    assert not issubclass(TxRefused, Exception)
