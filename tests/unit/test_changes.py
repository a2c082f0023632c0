"""An actor database's changesets, snapshots and restore (storage/changes.py), on real
files made as an actor's are: the template, then ActorDb's pragmas."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import apsw
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from wkhost.storage import changes, files
from wkhost.storage.actordb import ActorDb
from wkhost.storage.apply_changes import RestoreMismatch, restore
from wkhost.storage.changes import Capture, digest, snapshot_image

GUEST_SCHEMA = """
CREATE TABLE kv (k TEXT PRIMARY KEY, v);
CREATE TABLE log (a, b);
CREATE TABLE wr (k INTEGER, j TEXT, v BLOB, PRIMARY KEY (k, j)) WITHOUT ROWID;
CREATE TABLE ai (id INTEGER PRIMARY KEY AUTOINCREMENT, v);
CREATE TABLE audit (n INTEGER PRIMARY KEY, what);
CREATE TRIGGER kv_audit AFTER INSERT ON kv BEGIN INSERT INTO audit (what) VALUES (NEW.k); END;
"""


def open_actor(path: Path) -> apsw.Connection:
    """An actor's database as ActorDb opens it."""
    if not path.exists():
        files.create_from_template(path)
    conn = apsw.Connection(str(path))
    conn.config(apsw.SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1)
    list(conn.execute("PRAGMA locking_mode=EXCLUSIVE; PRAGMA synchronous=NORMAL; "
                      "PRAGMA max_page_count=10000"))
    return conn


@pytest.fixture
def source(tmp_path: Path) -> Iterator[apsw.Connection]:
    conn = open_actor(tmp_path / "src.db")
    list(conn.execute(GUEST_SCHEMA))  # before the capture: a snapshot carries the schema
    yield conn
    conn.close()


def run(conn: apsw.Connection, sql: str, params: tuple[object, ...] = ()) -> None:
    list(conn.execute(sql, params))


def commit_mix(conn: apsw.Connection, i: int) -> None:
    """One transaction of inserts, updates and deletes on every kind of table."""
    with conn:
        run(conn, "INSERT OR REPLACE INTO kv VALUES (?, ?)", (f"k{i % 5}", i))
        run(conn, "INSERT INTO log VALUES (?, ?)", (i, b"\x00" * i))
        run(conn, "DELETE FROM log WHERE a = ?", (i - 2,))
        run(conn, "UPDATE log SET b = 'x' WHERE a = ?", (i - 1,))
        run(conn, "INSERT OR REPLACE INTO wr VALUES (?, ?, ?)", (i % 3, "j", f"v{i}"))
        run(conn, "INSERT INTO ai (v) VALUES (?)", (i * 1.5,))
        run(conn, "DELETE FROM ai WHERE id = (SELECT max(id) FROM ai)" if i % 2 else "SELECT 1")
        run(conn, "INSERT OR REPLACE INTO main._wk_host_meta VALUES ('n', ?)", (i,))
        run(conn, "UPDATE main._wk_host_alarm SET at_ms = ?, gen = gen + 1", (1000 + i,))


def take(capture: Capture) -> bytes:
    cs = capture.take()
    assert cs is not None
    return cs


def test_restore_from_a_midway_snapshot_equals_the_source(source: apsw.Connection,
                                                          tmp_path: Path) -> None:
    capture = Capture(source)
    for i in range(3):
        commit_mix(source, i)
    take(capture)  # what the snapshot below covers
    image = snapshot_image(source)
    later = []
    for i in range(3, 12):
        commit_mix(source, i)
        if i % 3 == 2:  # several commits in each changeset
            later.append(take(capture))
    assert capture.take() is None
    target = tmp_path / "restored.db"
    restore(target, image, later)
    assert not Path(f"{target}-wal").exists()  # closed: all of it is in the file
    restored = open_actor(target)
    assert digest(restored) == digest(source)
    assert restored.execute("PRAGMA journal_mode").get == "wal"
    # AUTOINCREMENT carries on where the source did, not at a deleted row's id.
    run(restored, "INSERT INTO ai (v) VALUES ('next')")
    run(source, "INSERT INTO ai (v) VALUES ('next')")
    assert digest(restored) == digest(source)
    restored.close()
    capture.close()


def test_a_rolled_back_transaction_or_savepoint_is_not_captured(
        source: apsw.Connection) -> None:
    capture = Capture(source)
    run(source, "BEGIN")
    run(source, "INSERT INTO kv VALUES ('gone', 1)")
    run(source, "INSERT INTO ai (v) VALUES ('gone')")
    run(source, "ROLLBACK")
    assert capture.take() is None
    run(source, "BEGIN")
    run(source, "INSERT INTO kv VALUES ('kept', 1)")
    run(source, "SAVEPOINT s")
    run(source, "INSERT INTO wr VALUES (1, 'gone', NULL)")
    run(source, "DELETE FROM kv WHERE k = 'kept'")
    run(source, "ROLLBACK TO s")
    run(source, "COMMIT")
    cs = take(capture)
    seen = {(c.name, c.opcode) for c in apsw.Changeset.iter(cs)}
    assert seen == {("kv", apsw.SQLITE_INSERT), ("audit", apsw.SQLITE_INSERT)}
    capture.close()


def test_take_refuses_an_open_transaction(source: apsw.Connection) -> None:
    capture = Capture(source)
    run(source, "BEGIN")
    run(source, "INSERT INTO kv VALUES ('open', 1)")
    with pytest.raises(RuntimeError):
        capture.take()
    with pytest.raises(RuntimeError):
        snapshot_image(source)
    run(source, "COMMIT")
    assert capture.take() is not None
    capture.close()


def steps(source: apsw.Connection, n: int) -> tuple[bytes, list[bytes]]:
    """A snapshot, then n changesets of one commit_mix each."""
    capture = Capture(source)
    image = snapshot_image(source)
    out = []
    for i in range(n):
        commit_mix(source, i)
        out.append(take(capture))
    capture.close()
    return image, out


def assert_no_file(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        assert not Path(f"{path}{suffix}").exists()


def test_a_changeset_skipped_in_the_middle_is_a_mismatch(source: apsw.Connection,
                                                          tmp_path: Path) -> None:
    image, later = steps(source, 4)
    target = tmp_path / "r.db"
    with pytest.raises(RestoreMismatch, match="changeset 1 "):
        restore(target, image, [later[0], later[2], later[3]])
    assert_no_file(target)


def test_a_tampered_base_is_a_mismatch(source: apsw.Connection, tmp_path: Path) -> None:
    image, later = steps(source, 3)
    # The same snapshot with one row that a later changeset updates changed.
    other = tmp_path / "other.db"
    restore(other, image, later[:1])
    conn = open_actor(other)
    run(conn, "UPDATE main._wk_host_alarm SET gen = 99")
    tampered = snapshot_image(conn)
    conn.close()
    target = tmp_path / "r.db"
    with pytest.raises(RestoreMismatch, match=r"changeset 0 .*_wk_host_alarm"):
        restore(target, tampered, later[1:])
    assert_no_file(target)


def test_changes_to_a_table_the_snapshot_lacks_are_a_mismatch(
        source: apsw.Connection, tmp_path: Path) -> None:
    capture = Capture(source)
    image = snapshot_image(source)
    run(source, "CREATE TABLE late (k PRIMARY KEY, v)")  # DDL, and no snapshot after it
    run(source, "INSERT INTO late VALUES (1, 2)")
    cs = take(capture)
    assert capture.schema_moved
    target = tmp_path / "r.db"
    with pytest.raises(RestoreMismatch, match="skipped"):
        restore(target, image, [cs])
    assert_no_file(target)
    capture.close()


def test_a_dropped_table_makes_take_report_the_schema_not_fail(
        source: apsw.Connection) -> None:
    capture = Capture(source)
    run(source, "INSERT INTO kv VALUES ('a', 1)")
    run(source, "DROP TABLE kv")
    capture.take()  # no changeset of this window can be made; a snapshot goes instead
    assert capture.schema_moved
    run(source, "INSERT INTO log VALUES (1, 2)")
    assert capture.take() is not None
    assert not capture.schema_moved
    capture.close()


def test_a_bad_image_is_a_mismatch_and_leaves_no_file(source: apsw.Connection,
                                                     tmp_path: Path) -> None:
    target = tmp_path / "r.db"
    image = snapshot_image(source)
    restore(target, image, [])  # an earlier file at the path goes too
    with pytest.raises(RestoreMismatch, match="not an SQLite"):
        restore(target, b"not a database" * 100, [])
    assert_no_file(target)
    with pytest.raises(RestoreMismatch, match="changeset 0 "):
        restore(target, image, [b"T\x02\x01\x00kv\x00\x12\x00\x07"])  # cut short
    assert_no_file(target)
    no_host = apsw.Connection(":memory:")
    run(no_host, "CREATE TABLE t (x)")
    with pytest.raises(RestoreMismatch, match="host schema"):
        restore(target, no_host.serialize("main"), [])
    assert_no_file(target)


def test_a_stale_wal_of_the_path_is_not_read_into_the_restore(source: apsw.Connection,
                                                             tmp_path: Path) -> None:
    image, later = steps(source, 2)
    target = tmp_path / "r.db"
    restore(target, image, [])
    expected = digest_of(target)
    # The source's WAL, frames and all, left beside the path: SQLite would replay it.
    source_path = Path(source.filename)
    assert Path(f"{source_path}-wal").stat().st_size > 0
    shutil.copy(f"{source_path}-wal", f"{target}-wal")
    restore(target, image, [])
    assert digest_of(target) == expected


def digest_of(path: Path) -> str:
    conn = open_actor(path)
    try:
        return digest(conn)
    finally:
        conn.close()


def test_the_snapshot_holds_what_is_in_the_wal_and_deserializes(
        source: apsw.Connection) -> None:
    commit_mix(source, 1)  # in the WAL, not checkpointed
    image = snapshot_image(source)
    mem = apsw.Connection(":memory:")
    mem.deserialize("main", image)
    assert digest(mem) == digest(source)


def test_the_restored_file_opens_as_an_actor_db(source: apsw.Connection,
                                               tmp_path: Path) -> None:
    image, later = steps(source, 2)
    target = tmp_path / "r.db"
    restore(target, image, later)
    db = ActorDb(target, max_pages=10000)
    try:
        assert not db.created
        assert db.host_exec("PRAGMA journal_mode") == [("wal",)]
        assert db.host_exec("SELECT at_ms FROM main._wk_host_alarm") == [(1001,)]
        assert digest(db.conn) == digest(source)
    finally:
        db.close()


def test_is_schema_change() -> None:
    for op in (apsw.SQLITE_CREATE_TABLE, apsw.SQLITE_DROP_INDEX, apsw.SQLITE_ALTER_TABLE,
               apsw.SQLITE_CREATE_TRIGGER, apsw.SQLITE_DROP_VIEW, apsw.SQLITE_CREATE_VTABLE):
        assert changes.is_schema_change(op)
    for op in (apsw.SQLITE_INSERT, apsw.SQLITE_UPDATE, apsw.SQLITE_DELETE, apsw.SQLITE_READ,
               apsw.SQLITE_TRANSACTION, apsw.SQLITE_CREATE_TEMP_TABLE):
        assert not changes.is_schema_change(op)
    assert changes.is_schema_change(apsw.SQLITE_PRAGMA, "user_version", "3")
    assert not changes.is_schema_change(apsw.SQLITE_PRAGMA, "user_version", None)
    assert not changes.is_schema_change(apsw.SQLITE_PRAGMA, "foreign_keys", "1")


# A random small history: each op a transaction, committed or rolled back.
OPS = st.lists(st.tuples(
    st.sampled_from(["kv", "kv-del", "log", "log-del", "log-upd", "wr", "wr-del", "ai",
                     "ai-del", "meta"]),
    st.integers(0, 6),
    st.one_of(st.none(), st.integers(-3, 3), st.floats(allow_nan=False), st.text(max_size=4),
              st.binary(max_size=4)),
    st.booleans()), max_size=30)

SQL = {
    "kv": "INSERT OR REPLACE INTO kv VALUES ('k' || ?1, ?2)",
    "kv-del": "DELETE FROM kv WHERE k = 'k' || ?1 AND ?2 IS ?2",
    "log": "INSERT INTO log VALUES (?1, ?2)",
    "log-del": "DELETE FROM log WHERE a = ?1 AND ?2 IS ?2",
    "log-upd": "UPDATE log SET b = ?2 WHERE a = ?1",
    "wr": "INSERT OR REPLACE INTO wr VALUES (?1, 'j', ?2)",
    "wr-del": "DELETE FROM wr WHERE k = ?1 AND ?2 IS ?2",
    "ai": "INSERT INTO ai (v) VALUES (?2 || ?1)",
    "ai-del": "DELETE FROM ai WHERE id % 7 = ?1 AND ?2 IS ?2",
    "meta": "INSERT OR REPLACE INTO main._wk_host_meta VALUES ('m' || ?1, ?2)",
}


@settings(max_examples=40, deadline=None)
@given(ops=OPS, snapshot_at=st.integers(0, 30), take_every=st.integers(1, 4))
def test_any_history_restores_to_the_source(tmp_path_factory: pytest.TempPathFactory,
                                            ops: list[tuple[str, int, object, bool]],
                                            snapshot_at: int, take_every: int) -> None:
    d = tmp_path_factory.mktemp("h")
    src = open_actor(d / "src.db")
    list(src.execute(GUEST_SCHEMA))
    capture = Capture(src)
    image, later = snapshot_image(src), []
    for n, (op, k, v, commit) in enumerate(ops):
        with src:  # a rolled-back one raises out of its transaction
            run(src, "SAVEPOINT op")
            run(src, SQL[op], (k, v))
            run(src, "RELEASE op" if commit else "ROLLBACK TO op")
        if n % take_every == 0 or n == snapshot_at:
            cs = capture.take()
            if n == snapshot_at:
                image, later = snapshot_image(src), []
            elif cs is not None:
                later.append(cs)
    if (cs := capture.take()) is not None:
        later.append(cs)
    restore(d / "r.db", image, later)
    assert digest_of(d / "r.db") == digest(src)
    capture.close()
    src.close()


def test_schema_moved_follows_real_schema_changes_only(source: apsw.Connection) -> None:
    capture = Capture(source)
    run(source, "CREATE TABLE IF NOT EXISTS kv (k TEXT PRIMARY KEY, v)")  # there already
    capture.take()
    assert not capture.schema_moved
    run(source, "VACUUM")  # may renumber a table's rowids: no changeset says so
    capture.take()
    assert capture.schema_moved
    run(source, "CREATE INDEX kv_v ON kv (v)")
    capture.take()
    assert capture.schema_moved
    capture.close()


def test_a_virtual_table_restores_through_its_shadow_tables(source: apsw.Connection,
                                                           tmp_path: Path) -> None:
    run(source, "CREATE VIRTUAL TABLE doc USING fts5(body)")
    capture = Capture(source)
    image = snapshot_image(source)
    run(source, "INSERT INTO doc VALUES ('hello world'), ('other words')")
    run(source, "DELETE FROM doc WHERE body = 'other words'")
    restore(tmp_path / "r.db", image, [take(capture)])
    restored = open_actor(tmp_path / "r.db")
    assert restored.execute("SELECT body FROM doc WHERE doc MATCH 'hello'").fetchall() == [
        ("hello world",)]
    assert digest(restored) == digest(source)
    restored.close()
    capture.close()


class Recorder:
    """A replica that keeps what an actor's durable points would send (a unit's fake)."""

    def __init__(self) -> None:
        self.image: bytes | None = None
        self.changes: list[bytes] = []

    def durable(self, db: ActorDb) -> None:
        assert db.capture is not None
        cs = db.capture.take()
        if self.image is None or db.schema_changed or db.capture.schema_moved:
            self.image, self.changes, db.schema_changed = snapshot_image(db.conn), [], False
        elif cs is not None:
            self.changes.append(cs)

    def lazy(self, db: ActorDb) -> None:
        self.durable(db)

    def deleted(self) -> None:
        pass


def test_an_actor_dbs_durable_points_restore_to_it(tmp_path: Path) -> None:
    replica = Recorder()
    db = ActorDb(tmp_path / "a.db", max_pages=10000, working_copy=replica)
    try:
        db.guest_exec("CREATE TABLE t (k INTEGER PRIMARY KEY AUTOINCREMENT, v)", [], True)
        for i in range(5):
            db.guest_exec("INSERT INTO t (v) VALUES (?)", [i], True)
            db.guest_exec("DELETE FROM t WHERE v = ?", [i - 1], False)
        db.host_exec("UPDATE main._wk_host_alarm SET at_ms = 7, gen = gen + 1")
        replica.lazy(db)  # the event's end (events/settle.py)
        assert replica.image is not None and len(replica.changes) == 6  # 5 durable, 1 lazy
        restore(tmp_path / "r.db", replica.image, replica.changes)
        assert digest_of(tmp_path / "r.db") == digest(db.conn)
    finally:
        db.close()
