"""The actor database on a real file: durability modes, the authorizer, the size cap."""

from __future__ import annotations

import contextlib
import errno
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import apsw
import pytest
from wkhost.interfaces.sqlite import pack_rows
from wkhost.storage.actordb import ActorDb, SqlError
from wkhost.storage.files import _template_bytes, sync_new_file
from wkhost.storage.images import build_schema_image
from wkhost.storage.watch import StatementWatch


@pytest.fixture
def db(tmp_path: Path) -> ActorDb:
    d = ActorDb(tmp_path / "a.db", max_pages=64)
    yield d
    d.close()


def run(db: ActorDb, sql: str, params: tuple = (), durable: bool = False):  # type: ignore[no-untyped-def]
    return db.guest_exec(sql, list(params), durable)


def test_wal_and_normal_sync_are_in_force(db: ActorDb) -> None:
    assert db.host_exec("PRAGMA journal_mode")[0][0] == "wal"
    assert db.host_exec("PRAGMA synchronous")[0][0] == 1  # NORMAL


def test_a_new_database_is_made_from_the_template_whole(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "a.db"
    d = ActorDb(path, max_pages=64)
    try:
        assert d.host_exec("PRAGMA journal_mode")[0][0] == "wal"
        assert d.host_exec("SELECT at_ms, gen, retries FROM _wk_host_alarm") == [(None, 0, 0)]
        assert d.host_exec("SELECT count(*) FROM _wk_host_meta") == [(0,)]
    finally:
        d.close()
    assert sorted(p.name for p in path.parent.iterdir() if ".new" in p.name) == []


@pytest.mark.parametrize("content", [b"", None], ids=["empty file", "schema-less database"])
def test_a_database_file_cut_short_while_made_gets_the_host_schema(
        tmp_path: Path, content: bytes | None) -> None:
    path = tmp_path / "a.db"
    if content is None:
        import apsw

        conn = apsw.Connection(str(path))
        conn.execute("CREATE TABLE user_t (x)")
        conn.close()
    else:
        path.write_bytes(content)
    d = ActorDb(path, max_pages=64)
    try:
        assert d.host_exec("PRAGMA journal_mode")[0][0] == "wal"
        assert d.host_exec("SELECT gen FROM _wk_host_alarm") == [(0,)]
    finally:
        d.close()


def test_a_guest_statement_past_its_deadline_is_interrupted_and_the_db_goes_on(
        db: ActorDb) -> None:
    import time

    runaway = ("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
               "SELECT count(*) FROM c")
    t0 = time.monotonic()
    with pytest.raises(SqlError, match="wall-clock budget"):
        db.guest_exec(runaway, [], False, deadline=time.monotonic() + 0.2)
    assert time.monotonic() - t0 < 5
    assert run(db, "SELECT 1")[1] == [(1,)]  # no deadline: not interrupted
    assert run(db, "SELECT count(*) FROM (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL "
                   "SELECT x + 1 FROM c LIMIT 300000) SELECT x FROM c)")[1] == [(300000,)]


def test_exec_returns_columns_rows_and_values_of_every_type(db: ActorDb) -> None:
    run(db, "CREATE TABLE t (a, b, c, d, e)")
    run(db, "INSERT INTO t VALUES (?, ?, ?, ?, ?)", (None, 7, 2.5, "x", b"\x00\xff"))
    cols, rows = run(db, "SELECT * FROM t")
    assert cols == ["a", "b", "c", "d", "e"]
    assert rows == [(None, 7, 2.5, "x", b"\x00\xff")]


def test_durable_write_syncs_at_commit_not_inside_a_transaction(db: ActorDb, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    syncs: list[int] = []
    monkeypatch.setattr(db, "_fsync_wal", lambda: syncs.append(1))
    run(db, "CREATE TABLE t (x)")
    run(db, "INSERT INTO t VALUES (1)", durable=True)
    assert syncs == [1]
    run(db, "BEGIN")
    run(db, "INSERT INTO t VALUES (2)", durable=True)
    assert syncs == [1]            # still inside the transaction
    run(db, "COMMIT")
    assert syncs == [1, 1]         # the COMMIT, in a plain exec, carried the sync


def logged_wait(log: list[str]):  # type: ignore[no-untyped-def]
    """An `io_wait` for guest_exec that records when the run slot is given up and back."""
    @contextlib.contextmanager
    def io_wait():  # type: ignore[no-untyped-def]
        log.append("wait")
        yield
        log.append("resume")
    return io_wait


def test_only_the_fsync_of_a_durable_write_runs_as_a_wait(db: ActorDb, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The event's run slot is given up for the disk, not for every statement."""
    log: list[str] = []
    io_wait = logged_wait(log)

    monkeypatch.setattr(db, "_fsync_wal", lambda: log.append("fsync"))
    db.guest_exec("CREATE TABLE t (x)", [], False, io_wait=io_wait)
    db.guest_exec("INSERT INTO t VALUES (1)", [], False, io_wait=io_wait)
    assert log == []
    db.guest_exec("INSERT INTO t VALUES (2)", [], True, io_wait=io_wait)
    assert log == ["wait", "fsync", "resume"]


def test_a_long_guest_statement_lends_its_loan_until_it_ends(db: ActorDb) -> None:
    """SQLite burns no fuel: a statement still running when the watch looks lends its
    run slot and its thread's place (the loan) to other events, and takes them back as
    it ends; one that ends before the watch looks lends nothing. The watch is driven by
    hand here, from inside the statement, so that no timing decides the outcome."""
    log: list[str] = []

    def loan() -> Callable[[], None]:
        log.append("lend")
        return lambda: log.append("take back")

    db.watch = watch = StatementWatch(own_thread=False)
    db.conn.create_scalar_function("watch_looks", lambda: watch.look(time.monotonic() + 1))
    assert db.guest_exec("SELECT 1", [], False, loan=loan)[1] == [(1,)]
    assert log == []
    deadline = time.monotonic() + 60
    assert db.guest_exec("SELECT watch_looks() IS NULL", [], False, deadline=deadline,
                         loan=loan)[1] == [(1,)]
    assert log == ["lend", "take back"]
    assert db.guest_exec("SELECT 2", [], False, loan=loan)[1] == [(2,)]
    assert log == ["lend", "take back"]  # the next statement starts afresh


def test_the_watch_interrupts_a_statement_past_its_deadline_and_only_that_one(
        db: ActorDb) -> None:
    db.watch = watch = StatementWatch(own_thread=False)
    db.conn.create_scalar_function("watch_looks", lambda: watch.look(time.monotonic()))
    runaway = ("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
               "SELECT count(watch_looks()) FROM c")
    with pytest.raises(SqlError, match="wall-clock budget"):
        db.guest_exec(runaway, [], False, deadline=time.monotonic() - 1)
    on_time = ("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c "
               "WHERE x < 1000) SELECT count(watch_looks()) FROM c")
    assert db.guest_exec(on_time, [], False, deadline=time.monotonic() + 60)[1] == [(0,)]


def test_the_watch_sleeps_while_nothing_runs_and_wakes_for_the_next_statement(
        db: ActorDb) -> None:
    """Its own thread: idle, it stops looking (an idle host wakes for nothing); a
    statement that begins then is still cut at its deadline."""
    db.watch = watch = StatementWatch(tick_s=0.001)
    assert db.guest_exec("SELECT 1", [], False)[1] == [(1,)]
    until = time.monotonic() + 10
    while not watch.asleep and time.monotonic() < until:
        time.sleep(0.01)
    assert watch.asleep
    runaway = ("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
               "SELECT count(*) FROM c")
    started = time.monotonic()
    with pytest.raises(SqlError, match="wall-clock budget"):
        db.guest_exec(runaway, [], False, deadline=started + 0.2)
    assert time.monotonic() - started < 10


def test_the_event_end_rolls_back_an_open_transaction(db: ActorDb) -> None:
    run(db, "CREATE TABLE t (x)")
    run(db, "BEGIN")
    run(db, "INSERT INTO t VALUES (1)")
    assert db.end_event() is True
    assert run(db, "SELECT count(*) FROM t")[1] == [(0,)]


@pytest.mark.parametrize("sql", [
    "ATTACH DATABASE '/tmp/other.db' AS o",
    "VACUUM INTO '/tmp/copy.db'",
    "SELECT load_extension('/tmp/evil.so')",
    "PRAGMA writable_schema = ON",
    "PRAGMA journal_mode = OFF",
    "PRAGMA journal_mode = DELETE",
    "PRAGMA synchronous = OFF",
    "PRAGMA max_page_count = 100000000",
    "PRAGMA mmap_size = 1000000",
    "PRAGMA temp_store_directory = '/tmp'",
    "PRAGMA locking_mode = EXCLUSIVE",
    "SELECT * FROM _wk_host_alarm",
    "UPDATE _wk_host_meta SET v = 0",
    "DROP TABLE _wk_host_alarm",
    "CREATE INDEX i ON _wk_host_alarm (at_ms)",
])
def test_the_authorizer_denies(db: ActorDb, sql: str) -> None:
    with pytest.raises(SqlError):
        run(db, sql)
    assert db.host_exec("PRAGMA journal_mode")[0][0] == "wal"
    assert db.host_exec("PRAGMA synchronous")[0][0] == 1


def test_harmless_pragmas_are_allowed(db: ActorDb) -> None:
    run(db, "CREATE TABLE t (x)")
    assert run(db, "PRAGMA table_info(t)")[1][0][1] == "x"
    run(db, "PRAGMA user_version = 3")
    assert run(db, "PRAGMA user_version")[1] == [(3,)]


def test_the_size_cap_fails_a_write_cleanly(db: ActorDb) -> None:
    run(db, "CREATE TABLE t (x)")
    with pytest.raises(SqlError, match="full"):
        for _ in range(200):
            run(db, "INSERT INTO t VALUES (?)", (b"x" * 8000,))
    assert run(db, "PRAGMA integrity_check")[1] == [("ok",)]
    assert run(db, "SELECT count(*) FROM t")[1][0][0] > 0


def test_packed_rows_encode_blobs_as_base64() -> None:
    assert pack_rows(["a", "b"], [(1, b"\x00\x01"), (None, "t")]) == \
        '[["a","b"],[1,{"b64":"AAE="}],[null,"t"]]'


class _SyncCountingVFS(apsw.VFS):
    """The default VFS, counting SQLite's own xSync calls by file name."""

    def __init__(self) -> None:
        self.syncs: list[str] = []
        super().__init__("wk-count-syncs", "unix", makedefault=True)

    def xOpen(self, name: Any, flags: list[int]) -> apsw.VFSFile:
        vfs = self
        filename = name if isinstance(name, str) or name is None else name.filename()

        class File(apsw.VFSFile):
            def xSync(self, flags: int) -> None:
                vfs.syncs.append(Path(filename or "?").name)
                super().xSync(flags)

        return File("unix", name, flags)


@pytest.fixture
def sqlite_syncs() -> Iterator[list[str]]:
    _template_bytes()  # made (with its own syncs) before the count starts
    vfs = _SyncCountingVFS()
    yield vfs.syncs
    vfs.unregister()


@pytest.fixture
def host_syncs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[tuple[str, str]]:
    """The host's own fsync and fdatasync calls of this test's files, each recorded once
    done: (call, path). The new file's syncs run on another thread, so tests compare sets,
    not orders; its fdatasync is made slow, so that a durable write that does not wait for
    it shows.

    os.fsync is the whole process's: the syncs of other files (another test's, left on
    the process-wide syncing thread; the suite drains it between tests) are neither
    recorded nor slowed."""
    synced: list[tuple[str, str]] = []

    def recorder(real: Any, call: str) -> Any:
        def sync(fd: int) -> None:
            path = os.readlink(f"/proc/self/fd/{fd}")
            mine = Path(path).is_relative_to(tmp_path)
            if mine and call == "fdatasync":
                time.sleep(0.05)
            real(fd)
            if mine:
                synced.append((call, path))

        return sync

    monkeypatch.setattr(os, "fsync", recorder(os.fsync, "fsync"))
    monkeypatch.setattr(os, "fdatasync", recorder(os.fdatasync, "fdatasync"))
    return synced


def test_a_new_actors_file_and_directories_are_durable_before_its_first_durable_write_returns(
        tmp_path: Path, sqlite_syncs: list[str], host_syncs: list[tuple[str, str]]) -> None:
    path = tmp_path / "new-dir" / "a.db"
    wal = ("fsync", f"{path}-wal")
    made_durable = {
        ("fsync", str(tmp_path)),  # the new directory's entry, before any file is in it
        ("fdatasync", str(path)),  # the template's pages: in no WAL frame
        ("fsync", str(path.parent)),  # the entries of the file and of its WAL
    }
    d = ActorDb(path, max_pages=64)
    try:
        assert host_syncs[0] == ("fsync", str(tmp_path))
        d.first_host_write("INSERT INTO _wk_host_meta VALUES ('initialized', 0)")
        assert sqlite_syncs == []  # not the WAL header's, nor the directory's
        assert d.host_exec("PRAGMA synchronous")[0][0] == 1  # NORMAL again
        run(d, "CREATE TABLE t (x)")
        assert wal not in host_syncs
        run(d, "INSERT INTO t VALUES (1)", durable=True)
        assert set(host_syncs) == made_durable | {wal} and len(host_syncs) == 4
        run(d, "INSERT INTO t VALUES (2)", durable=True)
        assert host_syncs[4:] == [wal]  # from now on, the WAL alone
    finally:
        d.close()
    assert sqlite_syncs == []
    # Reopened with its WAL in place, nothing is skipped: SQLite's syncs are its own again,
    # and the file made before needs no sync of its own.
    del host_syncs[:]
    d = ActorDb(path, max_pages=64)
    try:
        d.first_host_write("UPDATE _wk_host_meta SET v = 1")
        assert d.host_exec("SELECT v FROM _wk_host_meta") == [(1,)]
        run(d, "INSERT INTO t VALUES (3)", durable=True)
        assert host_syncs == [wal]
    finally:
        d.close()


@pytest.fixture
def failing_fdatasync(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """fdatasync fails with EIO, for this test's files alone (it is the whole process's)."""
    real = os.fdatasync

    def fdatasync(fd: int) -> None:
        if not Path(os.readlink(f"/proc/self/fd/{fd}")).is_relative_to(tmp_path):
            return real(fd)
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "fdatasync", fdatasync)


@pytest.mark.usefixtures("failing_fdatasync")
def test_a_failed_sync_of_the_new_file_fails_every_durable_write(tmp_path: Path) -> None:
    d = ActorDb(tmp_path / "a.db", max_pages=64)
    try:
        run(d, "CREATE TABLE t (x)")
        for _ in range(2):  # not only the first: the file's pages may be lost for good
            with pytest.raises(OSError, match="Input/output error"):
                run(d, "INSERT INTO t VALUES (1)", durable=True)
    finally:
        d.close()


def test_a_new_file_deleted_before_its_sync_has_nothing_to_sync(tmp_path: Path) -> None:
    sync_new_file(tmp_path / "gone.db")  # delete-self came first: no error


def test_the_database_is_the_hosts_alone_while_open(tmp_path: Path) -> None:
    d = ActorDb(tmp_path / "a.db", max_pages=64)
    run(d, "CREATE TABLE t (x)")
    run(d, "INSERT INTO t VALUES (1)", durable=True)
    other = apsw.Connection(str(tmp_path / "a.db"))
    try:
        with pytest.raises(apsw.BusyError):
            other.execute("SELECT x FROM t").fetchall()
        assert not (tmp_path / "a.db-shm").exists()  # the WAL index is in memory
        d.close()
        assert other.execute("SELECT x FROM t").fetchall() == [(1,)]
    finally:
        other.close()


# -- schema images ---------------------------------------------------------------------

SCHEMA = "CREATE TABLE t (k TEXT PRIMARY KEY, v); CREATE INDEX t_v ON t (v)"
HOST_ROWS = "INSERT OR REPLACE INTO _wk_host_meta VALUES ('class', ?), ('id', ?)"


def _new(path: Path, image: Any = None) -> ActorDb:
    d = ActorDb(path, max_pages=64, image=image)
    d.first_host_write(HOST_ROWS, ("c", path.stem))
    return d


@pytest.mark.parametrize("statements,learnt", [
    ([SCHEMA], True),
    (["BEGIN; " + SCHEMA + "; COMMIT"], True),
    (["CREATE TABLE t (x); CREATE TRIGGER g AFTER INSERT ON t BEGIN DELETE FROM t; END;"
      " CREATE VIEW w AS SELECT x FROM t"], True),
    ([SCHEMA, "INSERT INTO t VALUES ('a', 1)"], False),  # two statements
    (["CREATE TABLE t (x); INSERT INTO t VALUES (1)"], False),  # a row written
    (["CREATE TABLE t (x DEFAULT 0); INSERT INTO t SELECT random()"], False),
    (["CREATE TABLE t AS SELECT random() AS x"], False),  # a function called
    (["CREATE TABLE t (x); PRAGMA user_version = 3"], False),  # a pragma
    (["CREATE TABLE t (x); SELECT name FROM sqlite_master"], False),  # rows back
    (["BEGIN; CREATE TABLE t (x)"], False),  # a transaction left open
])
def test_what_a_schema_image_is_learnt_from(tmp_path: Path, statements: list[str],
                                            learnt: bool) -> None:
    d = _new(tmp_path / "a.db")
    try:
        for sql in statements:
            run(d, sql)
        assert d.schema_script() == (statements[0] if learnt else None)
    finally:
        d.close()


def test_no_image_is_learnt_from_a_database_that_was_already_there(tmp_path: Path) -> None:
    _new(tmp_path / "a.db").close()
    d = ActorDb(tmp_path / "a.db", max_pages=64)
    try:
        run(d, SCHEMA)
        assert d.schema_script() is None
    finally:
        d.close()


def test_no_image_is_learnt_from_a_script_with_parameters(tmp_path: Path) -> None:
    d = _new(tmp_path / "a.db")
    try:
        run(d, "CREATE TABLE t (x DEFAULT 0); SELECT ?", (1,))
        assert d.schema_script() is None
    finally:
        d.close()


def test_a_database_made_from_an_image_is_what_the_script_would_make(tmp_path: Path) -> None:
    image = build_schema_image(SCHEMA, tmp_path)
    made, ran = _new(tmp_path / "made.db", image), _new(tmp_path / "ran.db")
    try:
        assert made.speculative == SCHEMA and ran.speculative is None
        # The same answer for the script, down to the connection's counters.
        answers = []
        for d in (made, ran):
            columns, rows = run(d, SCHEMA, durable=True)
            answers.append((columns, rows, d.conn.changes(), d.conn.last_insert_rowid(),
                            d.durable_pending))
        assert answers[0] == answers[1]
        assert made.speculative is None and not made.speculation_failed
        schema = "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY name"
        assert made.host_exec(schema) == ran.host_exec(schema)
        assert made.host_exec("SELECT * FROM _wk_host_meta") == [("class", "c"), ("id", "made")]
        for d in (made, ran):
            run(d, "INSERT INTO t VALUES ('a', 1)")
            assert run(d, "SELECT * FROM t") == (["k", "v"], [("a", 1)])
            assert d.host_exec("PRAGMA integrity_check") == [("ok",)]
    finally:
        made.close()
        ran.close()


@pytest.mark.parametrize("first", ["CREATE TABLE other (x)", "SELECT count(*) FROM sqlite_master",
                                   None])
def test_a_speculation_not_taken_up_gives_the_plain_template_back(tmp_path: Path,
                                                                  first: str | None) -> None:
    d = _new(tmp_path / "a.db", build_schema_image(SCHEMA, tmp_path))
    try:
        if first is None:
            d.end_speculation()  # an on-init that ran no SQL
        else:
            out = run(d, first)
            if first.startswith("SELECT"):
                assert out == (["count(*)"], [(2,)])  # the template's: no table t
        assert d.speculation_failed and d.speculative is None
        names = [r[0] for r in d.host_exec("SELECT name FROM sqlite_master ORDER BY name")]
        made = ["other"] if first == "CREATE TABLE other (x)" else []
        assert names == ["_wk_host_alarm", "_wk_host_meta", *made]
        assert d.host_exec("SELECT * FROM _wk_host_meta") == [("class", "c"), ("id", "a")]
        run(d, "SELECT 1", durable=True)  # the reopened database syncs like any other
    finally:
        d.close()


def test_a_new_file_closed_before_its_first_durable_write_is_still_synced_before_it(
        tmp_path: Path, host_syncs: list[tuple[str, str]]) -> None:
    """Evicted or asleep right after its creation: the database opened again takes the
    new file's syncs over (its fdatasync is slow here: the write must wait for it)."""
    path = tmp_path / "a.db"
    ActorDb(path, max_pages=64).close()
    d = ActorDb(path, max_pages=64)
    try:
        assert not d.created
        run(d, "CREATE TABLE t (x)")
        run(d, "INSERT INTO t VALUES (1)", durable=True)
        assert {("fdatasync", str(path)), ("fsync", str(tmp_path)),
                ("fsync", f"{path}-wal")} <= set(host_syncs)
    finally:
        d.close()


@pytest.mark.usefixtures("failing_fdatasync")
def test_a_failed_sync_of_a_new_file_still_fails_after_it_is_opened_again(
        tmp_path: Path) -> None:
    path = tmp_path / "b.db"
    ActorDb(path, max_pages=64).close()
    d = ActorDb(path, max_pages=64)
    try:
        run(d, "CREATE TABLE t (x)")
        with pytest.raises(OSError, match="Input/output error"):
            run(d, "INSERT INTO t VALUES (1)", durable=True)
    finally:
        d.close()
