"""Guest SQL in a read-only event (host/storage/readonly.py) on a real actor database:
SQLite refuses each statement that would change it, whatever its spelling; reads run;
and the refusal ends with the statement, so the host's own writes, and the next event's,
run as before. Also: the host knows its refusal by who raised it, and the guest SDK by
the kind the host gives it (`sqlite.last-error`), never by how its text begins."""

from __future__ import annotations

from pathlib import Path

import apsw
import pytest
from wkguest.errors import ReadOnlyError, SqliteError
from wkguest.readonly import read_only, refuse, sql_error
from wkhost.storage.actordb import ActorDb, SqlError
from wkhost.storage.readonly import READ_ONLY, reads_only
from wkhost.storage.statements import one_line

WRITES = [
    "INSERT INTO t VALUES (2)",
    "UPDATE t SET x = 3",
    "DELETE FROM t",
    "WITH a(v) AS (SELECT 5) INSERT INTO t SELECT v FROM a",
    "SELECT 1; INSERT INTO t VALUES (4)",
    "INSERT INTO t VALUES (6) RETURNING x",
    "CREATE TABLE u (y)",
    "DROP TABLE t",
    "ALTER TABLE t ADD COLUMN z",
    "CREATE INDEX i ON t (x)",
    "PRAGMA user_version = 7",
    "BEGIN IMMEDIATE",
]


@pytest.fixture
def db(tmp_path: Path) -> ActorDb:
    d = ActorDb(tmp_path / "a.db", max_pages=2048)
    d.guest_exec("CREATE TABLE t (x INTEGER)", [], False)
    d.guest_exec("INSERT INTO t VALUES (1)", [], False)
    return d


def rows(db: ActorDb) -> list[tuple[object, ...]]:
    return db.guest_exec("SELECT x FROM t ORDER BY x", [], False)[1]


@pytest.mark.parametrize("sql", WRITES)
def test_a_statement_that_would_change_the_database_is_refused(db: ActorDb, sql: str) -> None:
    with reads_only(db) as seen, pytest.raises(SqlError) as e:
        db.guest_exec(sql, [], False)
    assert str(e.value) == one_line(apsw.ReadOnlyError(READ_ONLY))
    assert str(e.value).startswith("ReadOnlyError: read-only: ")  # the text as it was
    assert seen.refused
    if db.conn.in_transaction:  # a script's SELECT before it (the host's end of event)
        db.conn.execute("ROLLBACK")
    assert rows(db) == [(1,)]
    assert db.guest_exec("PRAGMA user_version", [], False)[1] == [(0,)]
    assert db.host_exec("SELECT name, sql FROM sqlite_schema WHERE name NOT LIKE '!_wk!_%' "
                        "ESCAPE '!'") == [("t", "CREATE TABLE t (x INTEGER)")]


def test_reads_run_and_the_refusal_ends_with_the_statement(db: ActorDb) -> None:
    with reads_only(db):
        assert db.guest_exec("SELECT x FROM t; SELECT 2", [], False)[1] == [(1,), (2,)]
        assert db.guest_exec("WITH a(v) AS (SELECT x FROM t) SELECT v FROM a", [],
                             True)[1] == [(1,)]
        assert db.guest_exec("PRAGMA table_info(t)", [], False)[1][0][1] == "x"
        db.guest_exec("BEGIN", [], False)
        db.guest_exec("COMMIT", [], False)
    assert db.conn.exec_trace is None
    db.guest_exec("INSERT INTO t VALUES (8)", [], False)
    db.host_exec("UPDATE main._wk_host_meta SET v = v WHERE k = 'class'")
    assert rows(db) == [(1,), (8,)]


def test_the_refusal_ends_when_the_statement_fails_too(db: ActorDb) -> None:
    with pytest.raises(SqlError), reads_only(db) as seen:
        db.guest_exec("SELECT * FROM nowhere", [], False)
    assert not seen.refused  # failed, but not refused
    assert db.conn.exec_trace is None
    db.guest_exec("INSERT INTO t VALUES (9)", [], False)
    assert rows(db) == [(1,), (9,)]


def test_the_guest_sdk_refuses_changes_inside_the_block_only() -> None:
    refuse("an HTTP fetch")  # outside: nothing to refuse
    with read_only("query 'peek'"):
        with pytest.raises(ReadOnlyError, match="read-only: query 'peek' may only read, "
                                                "so an HTTP fetch is refused"):
            refuse("an HTTP fetch")
        with read_only("inner"), pytest.raises(ReadOnlyError, match="query 'peek'"):
            refuse("a call to another actor")
        host = one_line(apsw.ReadOnlyError(READ_ONLY))
        assert isinstance(sql_error(host, "read-only"), ReadOnlyError)
        assert "query 'peek' may only read" in str(sql_error(host, "read-only"))
        assert type(sql_error("SQLError: no such table: x", "sql")) is SqliteError
    refuse("an HTTP fetch")
    assert type(sql_error("SQLError: no such table: x", "sql")) is SqliteError
    assert type(sql_error(host, "read-only")) is ReadOnlyError
    assert str(sql_error(host, "read-only")) == host  # outside the block: the host's words


def test_the_guest_sdk_tells_the_refusal_by_its_kind_not_its_words() -> None:
    host = one_line(apsw.ReadOnlyError(READ_ONLY))
    look_alike = sql_error(host, "sql")  # e.g. a guest's own text in a CHECK's message
    assert type(look_alike) is SqliteError and look_alike.kind == "sql"
    assert str(look_alike) == host
    cut = sql_error("interrupted: ...", "narrowed-deadline")
    assert type(cut) is SqliteError and cut.kind == "narrowed-deadline"
