"""What guest SQL can learn of the host's `_wk_host_*` tables beyond their names and
definitions (host/storage/policy.py): nothing of their storage (pages, cells, payload
sizes) and nothing of their contents, by any table-valued or eponymous virtual table,
nor by their automatic indexes, whose names do not begin with the prefix.

`tests/unit/test_sql_sandbox.py` holds the plain statements on the host's names (read,
write, DDL, `PRAGMA table_info(_wk_host_meta)`); this file holds the roads around them:
`dbstat` in every form, the pragma functions, the automatic indexes, `ANALYZE`'s tables.
What the guest may still see, and why, is at the end: the host's schema is the same
for every actor and is no secret (docs/guarantees.md)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import apsw
import pytest
from wkhost.storage import host_rows as alarms
from wkhost.storage.actordb import ActorDb, SqlError

HOST_AUTOINDEX = "sqlite_autoindex__wk_host_meta_1"


@pytest.fixture
def db(tmp_path: Path) -> Iterator[ActorDb]:
    d = ActorDb(tmp_path / "a.db", max_pages=2048)
    d.guest_exec("CREATE TABLE t (x PRIMARY KEY)", [], False)
    d.guest_exec("INSERT INTO t VALUES (1)", [], False)
    d.host_exec("INSERT INTO main._wk_host_meta VALUES ('secret', ?)", ("s" * 3000,))
    yield d
    d.close()


def guest(db: ActorDb, sql: str, *params: object) -> list[tuple[object, ...]]:
    return db.guest_exec(sql, list(params), False)[1]  # type: ignore[arg-type]


def host_still_works(db: ActorDb) -> None:
    alarms.guest_set(db, 99)
    assert alarms.read(db).at_ms == 99
    assert db.host_exec("SELECT length(v) FROM main._wk_host_meta WHERE k = 'secret'") \
        == [(3000,)]
    assert guest(db, "SELECT x FROM t") == [(1,)]


# -- the storage of the host's tables ------------------------------------------------------
@pytest.mark.parametrize("sql", [
    "SELECT * FROM dbstat",
    "SELECT * FROM DBSTAT",
    "SELECT name, pageno, ncell, payload FROM dbstat WHERE name = '_wk_host_meta'",
    "SELECT sum(payload) FROM dbstat('main') WHERE name LIKE '\\_wk\\_host%' ESCAPE '\\'",
    "SELECT * FROM dbstat('main', 1)",
    "SELECT * FROM main.dbstat",
    "SELECT count(*) FROM dbstat WHERE name = 't'",  # even the guest's own: see the test
    "WITH s AS (SELECT * FROM dbstat) SELECT max(payload) FROM s",
    "CREATE VIRTUAL TABLE ds USING dbstat",
    "CREATE VIRTUAL TABLE ds USING dbstat(main)",
])
def test_dbstat_is_not_there_for_guest_sql(db: ActorDb, sql: str) -> None:
    """dbstat cannot be filtered per table: the authorizer is shown its columns, never
    the rows it will walk, and a `name` constraint is the guest's to leave out. It gives
    the host's tables' page numbers, cell counts and payload sizes (the length of what
    the host keeps), so the module is gone from an actor's connection altogether."""
    with pytest.raises(SqlError, match="no such (table|module)"):
        guest(db, sql)
    host_still_works(db)


def test_a_dbstat_table_made_before_is_unreadable(tmp_path: Path) -> None:
    """A virtual table over dbstat that an older host let a guest make stays in the
    file: reading it fails, as the module is not there."""
    path = tmp_path / "old.db"
    ActorDb(path, max_pages=2048).close()
    raw = apsw.Connection(str(path))
    raw.execute("CREATE VIRTUAL TABLE ds USING dbstat")
    raw.close()
    db = ActorDb(path, max_pages=2048)
    try:
        db.host_exec("INSERT INTO main._wk_host_meta VALUES ('secret', ?)", ("s" * 3000,))
        db.guest_exec("CREATE TABLE t (x PRIMARY KEY); INSERT INTO t VALUES (1)", [], False)
        with pytest.raises(SqlError, match="no such module: dbstat"):
            guest(db, "SELECT name, payload FROM ds")
        host_still_works(db)
    finally:
        db.close()


# -- the host's automatic indexes ----------------------------------------------------------
@pytest.mark.parametrize("sql", [
    f"PRAGMA index_info({HOST_AUTOINDEX})",
    f"PRAGMA index_xinfo('{HOST_AUTOINDEX}')",
    f"SELECT * FROM pragma_index_info('{HOST_AUTOINDEX}')",
    f"SELECT * FROM pragma_index_xinfo('{HOST_AUTOINDEX.upper()}')",
    f"REINDEX {HOST_AUTOINDEX}",
    "REINDEX _wk_host_meta",
    "REINDEX",  # every index, the host's among them
    "REINDEX BINARY",  # every index on a BINARY column
])
def test_the_host_tables_automatic_indexes_are_the_hosts(db: ActorDb, sql: str) -> None:
    """`sqlite_autoindex__wk_host_meta_1` is the host's table's index: its name does not
    begin with the prefix, and REINDEX names only the index to the authorizer."""
    with pytest.raises(SqlError, match="AuthError"):
        guest(db, sql)
    host_still_works(db)


# -- the pragma functions and ANALYZE: held already, kept held -----------------------------
@pytest.mark.parametrize("sql, params", [
    ("SELECT * FROM pragma_table_info('_wk_host_meta')", ()),
    ("SELECT * FROM pragma_table_xinfo('_WK_HOST_ALARM')", ()),
    ("SELECT * FROM pragma_table_info(?)", ("_wk_host_meta",)),
    ("SELECT * FROM pragma_table_info WHERE arg = '_wk_host_meta'", ()),
    ("SELECT * FROM pragma_table_info('_wk_host_meta', 'main')", ()),
    ("SELECT * FROM pragma_index_list('_wk_host_meta')", ()),
    ("SELECT * FROM pragma_foreign_key_list('_wk_host_meta')", ()),
    ("SELECT * FROM pragma_foreign_key_check('_wk_host_meta')", ()),
    ("SELECT * FROM pragma_integrity_check('_wk_host_meta')", ()),
    ("SELECT * FROM pragma_table_list('_wk_host_meta')", ()),
    ("SELECT * FROM t, pragma_table_info(CASE WHEN x THEN '_wk_host_meta' END)", ()),
    ("PRAGMA stats", ()),  # each table's and index's estimated rows and widths
    ("SELECT * FROM pragma_database_list", ()),  # the file's path
    ("ANALYZE", ()),
    ("ANALYZE main", ()),
    ("ANALYZE _wk_host_meta", ()),
    (f"ANALYZE {HOST_AUTOINDEX}", ()),
])
def test_the_pragma_functions_and_analyze_do_not_reach_the_host_tables(
        db: ActorDb, sql: str, params: tuple[str, ...]) -> None:
    """Each table-valued pragma prepares its PRAGMA when it runs, with the argument's
    value then, and the authorizer sees that; ANALYZE names each table it would read.
    So `sqlite_stat1` and `sqlite_stat4` (whose samples are index keys) never hold a
    row of the host's."""
    with pytest.raises(SqlError, match="AuthError"):
        guest(db, sql, *params)
    host_still_works(db)


def test_analyze_of_the_guests_own_tables_keeps_the_host_out_of_the_stat_tables(
        db: ActorDb) -> None:
    guest(db, "ANALYZE t")
    tables = {r[0] for r in guest(db, "SELECT tbl FROM sqlite_stat1 UNION "
                                      "SELECT tbl FROM sqlite_stat4")}
    assert tables == {"t"}, tables


# -- what the guest keeps ------------------------------------------------------------------
def test_the_guest_still_reads_its_own_layout_and_the_hosts_schema(db: ActorDb) -> None:
    """Its own indexes' pragmas, REINDEX of its own, its database's size; and the host's
    schema (names and definitions: the template every actor starts from), which a
    listing needs to leave the host's tables out."""
    own_index = guest(db, "SELECT name FROM pragma_index_list('t')")[0][0]
    assert guest(db, "SELECT name FROM pragma_index_info(?)", own_index) == [("x",)]
    guest(db, "REINDEX t")
    assert guest(db, "PRAGMA page_count")[0][0] > 0  # type: ignore[operator]
    names = {r[0] for r in guest(db, "SELECT name FROM sqlite_schema WHERE type = 'table'")}
    assert {"_wk_host_meta", "_wk_host_alarm", "t"} <= names, names
    listed = {r[0] for r in guest(db, "SELECT name FROM pragma_table_list")}
    assert "_wk_host_meta" in listed, listed
    host_still_works(db)
