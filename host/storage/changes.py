"""An actor database's changes as changesets (SQLite's session extension), and its
snapshot image: what cluster mode keeps in the store (replication/). The restore
from the two is storage/apply_changes.py.

What a changeset of `Capture` carries: every row inserted, updated or deleted in main's
tables and committed, by statements, triggers or foreign-key actions, with the old values
of every column an update or a delete changes. Tables without a PRIMARY KEY are keyed by
their rowid (SQLITE_SESSION_OBJCONFIG_ROWID). Changes rolled back, whole transactions or
savepoints, are not in it: a changeset is the difference between the rows as they were
first touched and as they are when it is taken.

What it does not carry, so that a snapshot must go instead (`is_schema_change`,
`Capture.schema_moved`): DDL of any kind (CREATE, DROP, ALTER, ANALYZE's new tables, a
VACUUM's new rowids), and the header's user_version and application_id. Nor the hidden
rowid of a table whose PRIMARY KEY is not an INTEGER PRIMARY KEY: rows restored from
changesets may get other rowids than the source's (a snapshot keeps them).

sqlite_sequence (AUTOINCREMENT's counters), which sessions leave out, is carried by
`Capture` itself, as a table of its own at the head of the changeset keyed by name: an
AUTOINCREMENT table must not hand out a deleted row's id again after a restore.
"""

from __future__ import annotations

import hashlib
import struct
from typing import Any

import apsw

SEQUENCE = "sqlite_sequence"

# Authorizer action codes of DDL: what leaves the schema other than a changeset knows it.
# ANALYZE makes sqlite_stat1/4 when they are missing (and stat4's rows are never carried).
# TEMP objects are not main's (and policy.py denies them).
SCHEMA_CHANGES = frozenset({
    apsw.SQLITE_CREATE_TABLE, apsw.SQLITE_CREATE_INDEX, apsw.SQLITE_CREATE_TRIGGER,
    apsw.SQLITE_CREATE_VIEW, apsw.SQLITE_CREATE_VTABLE, apsw.SQLITE_DROP_TABLE,
    apsw.SQLITE_DROP_INDEX, apsw.SQLITE_DROP_TRIGGER, apsw.SQLITE_DROP_VIEW,
    apsw.SQLITE_DROP_VTABLE, apsw.SQLITE_ALTER_TABLE, apsw.SQLITE_ANALYZE})
# Pragmas that set the header, which no changeset carries.
HEADER_PRAGMAS = frozenset({"user_version", "application_id"})


def is_schema_change(op: int, p1: str | None = None, p2: str | None = None) -> bool:
    """Whether an authorizer action (with its first two arguments, for PRAGMA) changes
    what a changeset would not carry: the schema, or the header's settable fields."""
    if op == apsw.SQLITE_PRAGMA:
        return p2 is not None and (p1 or "").lower() in HEADER_PRAGMAS
    return op in SCHEMA_CHANGES


class Capture:
    """The changes committed on `conn` since it was made or since the last `take`."""

    def __init__(self, conn: apsw.Connection) -> None:
        self._conn = conn
        self._session = self._new_session()
        self._schema_version = _schema_version(conn)
        # sqlite_sequence comes and goes with DDL only: looked for when the schema moves.
        self._has_sequence = _has_sequence(conn)
        self._sequence = _read_sequence(conn) if self._has_sequence else {}
        # Whether the schema changed (schema_version moved) in the window the last `take`
        # closed: the caller sends a snapshot then, whatever `take` returned.
        self.schema_moved = False

    def _new_session(self) -> apsw.Session:
        session = apsw.Session(self._conn, "main")
        session.config(apsw.SQLITE_SESSION_OBJCONFIG_ROWID, 1)
        session.attach()  # every table, those made later too
        return session

    def take(self) -> bytes | None:
        """The changeset of what was committed since the last take (None if nothing
        was), and a fresh capture from here. Only with no transaction open: an open one's
        changes would be in it, committed or not."""
        conn = self._conn
        if conn.in_transaction:
            raise RuntimeError("Capture.take with a transaction open")
        done, self._session = self._session, self._new_session()
        version = _schema_version(conn)
        self.schema_moved = version != self._schema_version
        self._schema_version = version
        if self.schema_moved:
            self._has_sequence = _has_sequence(conn)
        try:
            cs = done.changeset()
        except apsw.SchemaChangeError:
            # A table dropped or renamed under the session: there is no changeset of the
            # window, and the caller sends a snapshot.
            self.schema_moved, cs = True, b""
        finally:
            done.close()
        sequence = _read_sequence(conn) if self._has_sequence else {}
        head = _sequence_changes(self._sequence, sequence)
        self._sequence = sequence
        return (head + cs) or None

    def close(self) -> None:
        self._session.close()


def _schema_version(conn: apsw.Connection) -> int:
    return int(conn.execute("PRAGMA main.schema_version").get)


def _has_sequence(conn: apsw.Connection) -> bool:
    """Whether main has sqlite_sequence (made with its first AUTOINCREMENT table)."""
    return bool(conn.execute(
        f"SELECT 1 FROM main.sqlite_schema WHERE name = '{SEQUENCE}'").fetchall())


def _read_sequence(conn: apsw.Connection) -> dict[str, Any]:
    return {str(n): s for n, s in conn.execute(f"SELECT name, seq FROM main.{SEQUENCE}")}


# -- sqlite_sequence as a changeset table (the format of sqlite3session.h) ----------
_INSERT, _DELETE, _UPDATE = apsw.SQLITE_INSERT, apsw.SQLITE_DELETE, apsw.SQLITE_UPDATE
_SEQUENCE_TABLE = b"T\x02\x01\x00" + SEQUENCE.encode() + b"\x00"  # 2 columns, name the key
_UNDEFINED = b"\x00"
_ABSENT = object()


def _sequence_changes(before: dict[str, Any], after: dict[str, Any]) -> bytes:
    """What changed in sqlite_sequence between two reads, as one changeset table."""
    rows = bytearray()
    for name in sorted(before.keys() | after.keys()):
        old, new = before.get(name, _ABSENT), after.get(name, _ABSENT)
        if type(old) is type(new) and old == new:
            continue
        key = _value(name)
        if old is _ABSENT:
            rows += bytes((_INSERT, 0)) + key + _value(new)
        elif new is _ABSENT:
            rows += bytes((_DELETE, 0)) + key + _value(old)
        else:
            rows += bytes((_UPDATE, 0)) + key + _value(old) + _UNDEFINED + _value(new)
    return _SEQUENCE_TABLE + rows if rows else b""


def _value(v: Any) -> bytes:
    if v is None:
        return b"\x05"
    if isinstance(v, int):
        return b"\x01" + struct.pack(">q", v)
    if isinstance(v, float):
        return b"\x02" + struct.pack(">d", v)
    data = v.encode() if isinstance(v, str) else bytes(v)
    return (b"\x03" if isinstance(v, str) else b"\x04") + _varint(len(data)) + data


def _varint(n: int) -> bytes:
    """SQLite's varint (big-endian, 7 bits a byte), for lengths under 2**56."""
    out = [n & 0x7F]
    n >>= 7
    while n:
        out.append(0x80 | (n & 0x7F))
        n >>= 7
    return bytes(reversed(out))


# -- snapshots ------------------------------------------------------------------------
# Header bytes 18-19, the file format's read and write versions: 2 is WAL mode, 1 the
# rollback journal. A WAL-mode image does not deserialize (CantOpenError), so images are
# kept at 1 (storage/apply_changes.py sets a file written from one back to 2).
_ROLLBACK = b"\x01\x01"


def snapshot_image(conn: apsw.Connection) -> bytes:
    """The database as one image: what storage/apply_changes.py's `restore` starts from. No
    transaction may be open (the image would hold its uncommitted changes)."""
    if conn.in_transaction:
        raise RuntimeError("snapshot_image with a transaction open")
    image = bytearray(conn.serialize("main"))
    image[18:20] = _ROLLBACK
    return bytes(image)


# -- digest ----------------------------------------------------------------------------
def digest(conn: apsw.Connection) -> str:
    """sha256 of the content of every table of main: tables by name, rows by primary key
    (or rowid, for a table without one), values with their types. Virtual tables are left
    out (their shadow tables are in). For tests, and to check a restore."""
    h = hashlib.sha256()
    for table, sql in conn.execute(
            "SELECT name, sql FROM main.sqlite_schema WHERE type = 'table' ORDER BY name"):
        if str(sql or "").upper().startswith("CREATE VIRTUAL"):
            continue
        _digest_table(conn, str(table), h)
    return h.hexdigest()


def _digest_table(conn: apsw.Connection, table: str, h: Any) -> None:
    info = conn.execute(f"PRAGMA main.table_info({_quote(table)})").fetchall()
    columns = [str(c[1]) for c in info]
    keys = [str(c[1]) for c in sorted((c for c in info if c[5]), key=lambda c: int(str(c[5])))]
    # Each value with its type, and text as its bytes: a guest's text need not be UTF-8.
    values = ", ".join(f"typeof({c}), CASE typeof({c}) WHEN 'text' THEN CAST({c} AS BLOB) "
                       f"ELSE {c} END" for c in map(_quote, columns))
    if table.startswith("sqlite_"):
        # SQLite's own (sqlite_sequence, sqlite_stat1): keyed by their content; their
        # rowids are not carried (sessions key sqlite_stat1 by table and index).
        order = ", ".join(map(_quote, columns))
    elif keys:
        order = ", ".join(map(_quote, keys))
    else:
        columns.insert(0, "rowid")
        values, order = f"rowid, {values}", "rowid"
    h.update(b"T" + _encode((table, *columns)))
    for row in conn.execute(f"SELECT {values} FROM main.{_quote(table)} ORDER BY {order}"):
        h.update(b"R" + _encode(row))


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _encode(row: tuple[Any, ...]) -> bytes:
    """A row's values, each with its type (as a changeset record has them)."""
    return _varint(len(row)) + b"".join(map(_value, row))
