"""Hostile guest SQL against a real actor database (host/storage/policy.py, host/storage/watch.py,
host/storage/functions.py): each class of hole of Hardening I, tried several ways. Every test
asserts the outcome (refused, cut, or answered right) and that the database, and the
host's own statements on it, still work after."""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import apsw
import pytest
from wkhost.storage import functions as sql_functions
from wkhost.storage import host_rows as alarms
from wkhost.storage import policy as sql_policy
from wkhost.storage.actordb import ActorDb, SqlError


@pytest.fixture
def db(tmp_path: Path) -> Iterator[ActorDb]:
    d = ActorDb(tmp_path / "a.db", max_pages=2048, max_value_bytes=8 << 20)
    d.guest_exec("CREATE TABLE t (x)", [], False)
    d.guest_exec("INSERT INTO t VALUES (1)", [], False)
    yield d
    d.close()


def guest(db: ActorDb, sql: str, *params: object, deadline: float = float("inf")
          ) -> list[tuple[object, ...]]:
    return db.guest_exec(sql, list(params), False, deadline=deadline)[1]  # type: ignore[arg-type]


def host_still_works(db: ActorDb) -> None:
    """The host's statements read and write its own rows, and nothing else ran in them."""
    before = alarms.read(db)
    alarms.guest_set(db, 1234)
    assert alarms.read(db) == alarms.AlarmRow(1234, before.gen + 1, 0)
    alarms.guest_set(db, None)
    assert db.host_exec("SELECT count(*) FROM main._wk_host_meta") == [(0,)]
    assert guest(db, "SELECT count(*) FROM t") == [(1,)]


# -- nothing of the guest's runs inside a host statement ----------------------------------
@pytest.mark.parametrize("sql", [
    "CREATE TEMP TRIGGER tr AFTER UPDATE ON main._wk_host_alarm BEGIN "
    "INSERT INTO t SELECT v FROM _wk_host_meta; END",
    "CREATE TEMP TRIGGER tr AFTER UPDATE ON main._wk_host_alarm BEGIN "
    "DELETE FROM main._wk_host_alarm; END",
    "CREATE TRIGGER temp.tr AFTER INSERT ON main.t BEGIN SELECT 1; END",
    "CREATE TEMP TRIGGER tr AFTER INSERT ON main.t BEGIN SELECT 1; END",
    "CREATE TEMP VIEW _wk_host_alarm AS SELECT 99 AS at_ms, 0 AS gen, 0 AS retries",
    "CREATE TEMP VIEW v AS SELECT 1",
    "CREATE VIEW temp.v AS SELECT 1",
    "CREATE TEMP TABLE tt (a)",
    "CREATE TABLE temp.tt (a)",
    "CREATE TEMPORARY TABLE tt AS SELECT * FROM t",
    "CREATE VIRTUAL TABLE temp.f USING fts5(a)",
])
def test_no_temp_object_of_any_kind_can_be_made(db: ActorDb, sql: str) -> None:
    with pytest.raises(SqlError, match="not authorized"):
        guest(db, sql)
    assert db.host_exec("SELECT count(*) FROM temp.sqlite_master") == [(0,)]
    host_still_works(db)


def test_a_trigger_reached_from_a_host_statement_does_nothing_there(db: ActorDb) -> None:
    """Should a trigger ever sit on a host table (none can be made by the guest), the host
    statement that fires it fails instead of running the trigger's body with the host's
    rights. Made here behind the guest rules' back, as a guest never could."""
    db.host_exec("CREATE TRIGGER sneak AFTER UPDATE ON main._wk_host_alarm BEGIN "
                 "INSERT INTO t SELECT v FROM main._wk_host_meta; END")
    with pytest.raises(apsw.AuthError):
        alarms.guest_set(db, 5)
    assert guest(db, "SELECT count(*) FROM t") == [(1,)]


# -- the host's names ----------------------------------------------------------------------
@pytest.mark.parametrize("sql", [
    "ALTER TABLE t RENAME TO _wk_host_mine",
    "ALTER TABLE t RENAME TO '_wk_host_mine'",
    'ALTER TABLE t RENAME TO "_WK_HOST_mine"',
    "ALTER TABLE t RENAME TO [_Wk_Host_mine]",
    "ALTER TABLE t RENAME TO `_wk_host_mine`",
    "CREATE TABLE _wk_host_x (a)",
    "CREATE TABLE '_wk_host_x' (a)",
    "CREATE VIEW _wk_host_v AS SELECT 1",
    "CREATE INDEX _wk_host_i ON t(x)",
    "CREATE TRIGGER _wk_host_tr AFTER INSERT ON t BEGIN SELECT 1; END",
    "CREATE VIRTUAL TABLE _wk_host_f USING fts5(a)",
    "CREATE VIEW v AS SELECT * FROM _wk_host_meta",
    "CREATE TRIGGER tr AFTER INSERT ON t BEGIN DELETE FROM main._wk_host_alarm; END",
    "CREATE TRIGGER tr AFTER INSERT ON _wk_host_meta BEGIN SELECT 1; END",
    "CREATE TABLE c (k TEXT REFERENCES _wk_host_meta (k) ON DELETE CASCADE)",
    "DROP TABLE _wk_host_alarm",
    "ALTER TABLE _wk_host_meta ADD COLUMN z",
    "ALTER TABLE _wk_host_meta RENAME TO m",
    "SELECT * FROM _wk_host_meta",
    "SELECT * FROM main._wk_host_alarm",
    "SELECT * FROM \"_WK_HOST_ALARM\"",
    "UPDATE main._wk_host_alarm SET at_ms = 1",
    "DELETE FROM main._wk_host_alarm",
    "INSERT INTO _wk_host_meta VALUES ('k', 'v')",
    "PRAGMA table_info(_wk_host_meta)",
    "PRAGMA index_list('_wk_host_alarm')",
])
def test_the_host_names_are_out_of_reach_by_every_path(db: ActorDb, sql: str) -> None:
    with pytest.raises(SqlError, match="AuthError"):
        guest(db, sql)
    names = [r[0] for r in guest(db, "SELECT name FROM sqlite_schema ORDER BY name")]
    assert names == ["_wk_host_alarm", "_wk_host_meta", "t"]
    host_still_works(db)


def test_the_host_statement_cached_under_its_text_is_authorized_again_for_the_guest(
        db: ActorDb) -> None:
    """apsw caches prepared statements by their text, and a cached one is not authorized
    again: the guest must not borrow the host's prepared alarm write."""
    alarms.guest_set(db, 77)  # prepared, and cached, as the host's
    host_sql = "UPDATE main._wk_host_alarm SET at_ms = ?, gen = gen + 1, retries = 0"
    with pytest.raises(SqlError, match="not authorized"):
        db.guest_exec(host_sql, [1], False)
    assert alarms.read(db).at_ms == 77


def test_a_query_may_still_leave_the_host_tables_out_by_name(db: ActorDb) -> None:
    assert guest(db, "SELECT name FROM sqlite_schema WHERE name NOT LIKE '_wk_host_%'") \
        == [("t",)]


def test_guest_sql_renames_its_own_tables_freely(db: ActorDb) -> None:
    guest(db, "ALTER TABLE t RENAME TO t2")
    guest(db, "ALTER TABLE t2 RENAME COLUMN x TO y")
    assert guest(db, "SELECT y FROM t2") == [(1,)]
    host_still_works_after_rename = alarms.read(db)
    assert host_still_works_after_rename.at_ms is None


# -- much work in few steps ----------------------------------------------------------------
@pytest.mark.parametrize("sql", [
    "WITH RECURSIVE d(s, n) AS (SELECT 'ab', 1 UNION ALL SELECT s || s, n + 1 FROM d "
    "WHERE n < 29) SELECT max(length(s)) FROM d",
    "SELECT length(randomblob(900000000))",
    "SELECT length(hex(randomblob(400000000)))",
    "SELECT length(zeroblob(1000000000))",
    "SELECT length(printf('%.*c', 1000000000, 'x'))",
    "SELECT length(replace(hex(randomblob(1000000)), 'A', hex(randomblob(1000000))))",
    "SELECT length(group_concat(hex(randomblob(1000000)))) FROM "
    "(WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 100) "
    "SELECT x FROM c)",
])
def test_a_value_past_the_cap_is_refused_and_the_db_goes_on(db: ActorDb, sql: str) -> None:
    with pytest.raises(SqlError, match="TooBigError"):
        guest(db, sql)
    host_still_works(db)


def test_a_statement_text_past_its_cap_is_refused(db: ActorDb) -> None:
    long_sql = "SELECT 1" + " " * sql_policy.SQL_MAX_BYTES
    with pytest.raises(SqlError, match="TooBigError"):
        guest(db, long_sql)


@pytest.mark.parametrize("sql, expected", [
    ("SELECT instr(?1, ?2)", 0),
    ("SELECT length(replace(?1, ?2, 'x'))", 1 << 22),
    ("SELECT length(trim(?1, ?2 || 'b'))", 0),
    ("SELECT length(ltrim(?1, ?2 || 'b'))", 0),
    ("SELECT length(rtrim(?1, ?2 || 'b'))", 0),
])
def test_quadratic_builtins_are_linear(db: ActorDb, sql: str, expected: int) -> None:
    """SQLite's own take len(X) * len(Y) byte compares in one VM step (hours here),
    beyond any deadline: the stand-ins answer the same, at once."""
    haystack = "a" * (1 << 22)
    needle = "a" * (1 << 21) + "b"
    assert guest(db, sql, haystack, needle[:-1] if "trim" in sql else needle) == [(expected,)]


def test_the_stand_ins_answer_as_sqlite_builtins_do() -> None:
    """Every function, on a seeded mix of every type of value (invalid UTF-8 included),
    gives the bytes SQLite's own gives (compared through hex, which sees them all)."""
    builtin = apsw.Connection(":memory:")
    mine = apsw.Connection(":memory:")
    sql_functions.install(mine, 1 << 30)
    values = [None, "", "a", "abc", "aaab", "ba", "ab a", "é漢", b"ab", b"\x00a", b"a\x00",
              "a\x00b", 1, 0, 12.5, 1e20, -3, "  x  ", "xyx", "1.0", b"\xff\xfe", b"a\xffb"]
    calls = ["instr(?,?)", "replace(?,?,?)", "trim(?,?)", "ltrim(?,?)", "rtrim(?,?)"]
    rng = random.Random(22)
    for _ in range(5000):
        call = rng.choice(calls)
        args = [rng.choice(values) for _ in range(call.count("?"))]
        sql = f"SELECT hex({call}), typeof({call}) = 'integer'"
        assert mine.execute(sql, args * 2).fetchall() == \
            builtin.execute(sql, args * 2).fetchall(), (call, args)


def test_the_watch_cuts_a_statement_of_few_heavy_steps_at_its_deadline(db: ActorDb) -> None:
    """Each row costs a big value's worth of work in a single VM step: far too few steps
    for a progress handler to see the deadline. The watch's thread interrupts it."""
    heavy = ("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
             "SELECT count(length(randomblob(8000000))) FROM c")
    with pytest.raises(SqlError, match="wall-clock budget"):
        guest(db, heavy, deadline=time.monotonic() + 0.2)
    host_still_works(db)


# -- temporary data ------------------------------------------------------------------------
def _deleted_files() -> list[str]:
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.endswith("(deleted)"):
            found.append(target)
    return found


def test_a_big_sort_spills_to_no_file(db: ActorDb) -> None:
    """Sorts and materialised subqueries stay in SQLite's memory (temp_store=MEMORY),
    under the heap limit, instead of a deleted file in the temporary directory that no
    cap of the actor's counts."""
    before = set(_deleted_files())  # pytest's own captures are deleted files too
    seen: list[list[str]] = []
    db.conn.create_scalar_function("look", lambda x: seen.append(_deleted_files()) or x)
    guest(db, "SELECT look(x) FROM (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL "
              "SELECT x + 1 FROM c WHERE x < 300000) SELECT x FROM c ORDER BY "
              "randomblob(64)) LIMIT 1")
    assert len(seen) == 1 and set(seen[0]) - before == set()


def test_past_the_heap_limit_the_statement_fails_and_the_next_one_runs(db: ActorDb) -> None:
    before = apsw.hard_heap_limit(0)
    apsw.hard_heap_limit(apsw.memory_used() + (32 << 20))
    try:
        with pytest.raises(SqlError, match="NoMemError"):
            guest(db, "SELECT count(*) FROM (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL "
                      "SELECT x + 1 FROM c WHERE x < 2000000) SELECT x FROM c ORDER BY "
                      "randomblob(200))")
    finally:
        apsw.hard_heap_limit(before)
    assert guest(db, "SELECT count(*) FROM t") == [(1,)]
    host_still_works(db)


def test_statements_of_other_threads_run_while_one_is_cut(tmp_path: Path) -> None:
    """A runaway statement on one actor's database holds no other: a neighbour's
    statements, on their own thread, complete while it runs."""
    hostile = ActorDb(tmp_path / "h.db", max_pages=2048)
    neighbour = ActorDb(tmp_path / "n.db", max_pages=2048)
    errors: list[str] = []
    running = threading.Event()
    hostile.conn.create_scalar_function("running", lambda: running.set())

    def run_hostile() -> None:
        try:
            hostile.guest_exec("WITH RECURSIVE c(x) AS (SELECT running() UNION ALL "
                               "SELECT x + 1 FROM c) SELECT count(*) FROM c", [], False,
                               deadline=time.monotonic() + 600)
        except SqlError as e:
            errors.append(str(e))

    t = threading.Thread(target=run_hostile)
    t.start()
    try:
        assert running.wait(timeout=60)
        for i in range(50):
            assert neighbour.guest_exec("SELECT ?", [i], False)[1] == [(i,)]
    finally:
        hostile.conn.interrupt()
        t.join(timeout=60)
    assert errors and "interrupted" in errors[0]
    hostile.close()
    neighbour.close()
