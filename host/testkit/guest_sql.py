"""The `sqlite` interface in the kit: the host's own ActorDb, so a test's SQL meets the
same authorizer, reserved names, caps and errors as in a component.

One difference, on purpose: the syncs are skipped, a durable write's, a new database's
and SQLite's own (synchronous=OFF). A test's database needs no durability against power
loss, and the syncs would cost a test more than the rest of it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from ..interfaces.sqlite import Packed, storage_reason
from ..storage.actordb import ActorDb, SqlError, StorageError
from ..storage.readonly import reads_only
from ..storage.statements import ROW_BYTES, Dropped, Rows, SqlValue

_sizeof = sys.getsizeof
DB_MAX_BYTES = 1 << 30  # the host's default cap (--db-max-mb): 1 GiB


class TestDb(ActorDb):
    """An actor's database in a test: the host's, without its syncs (a durable write's,
    a new file's and its directory's)."""

    __test__ = False  # not a pytest test class

    def _fsync_wal(self) -> None:
        pass

    def _sync_new_file(self) -> None:
        pass

    def _connect(self) -> None:
        super()._connect()
        # SQLite's own syncs too: a new WAL's header and directory, a checkpoint's.
        list(self.conn.execute("PRAGMA synchronous=OFF"))


class _Values(Rows):
    """`exec`'s rows as the bindings' `value` cases, made as they come."""

    __slots__ = ("wit",)

    def __init__(self, wit: ModuleType, cap: int) -> None:
        super().__init__(cap)
        self.wit = wit

    def add(self, row: tuple[Any, ...]) -> None:
        self.count += 1
        self.size += ROW_BYTES + sum(map(_sizeof, row))
        if self.size > self.cap:
            self.too_large()
        self.rows.append([value(self.wit, v) for v in row])


def value(wit: ModuleType, v: Any) -> Any:
    """A column's value as the bindings' `value` case."""
    if v is None:
        return wit.Value_Null()
    if isinstance(v, int):
        return wit.Value_Integer(v)
    if isinstance(v, float):
        return wit.Value_Real(v)
    if isinstance(v, str):
        return wit.Value_Text(v)
    return wit.Value_Blob(bytes(v).decode("latin-1"))


def params(wit: ModuleType, given: list[Any]) -> list[SqlValue]:
    out: list[SqlValue] = []
    for v in given:
        if isinstance(v, wit.Value_Null):
            out.append(None)
        elif isinstance(v, wit.Value_Blob):
            out.append(v.value.encode("latin-1"))
        else:
            out.append(v.value)
    return out


class GuestSql:
    """The `sqlite` functions of one actor, over its database file."""

    def __init__(self, path: Path, wit: ModuleType, err: type[Exception]) -> None:
        self.db = TestDb(path, DB_MAX_BYTES // 4096)
        self.wit, self.err = wit, err
        self.read_only = False  # lifecycle.read-only was called in this event
        self.last: tuple[str, str] | None = None  # (kind, message) of this event's failure

    def _run(self, sql: str, given: list[Any], durable: bool, into: Rows) -> list[str]:
        """Run one guest statement; raise the bindings' Err with the host's text (never
        through a context manager: Err is a frozen dataclass, whose traceback
        contextlib's exit could not set)."""
        failed: tuple[str, str] | None = None
        columns: list[str] = []
        try:
            if self.read_only:
                with reads_only(self.db) as seen:
                    try:
                        columns, _ = self.db.guest_exec(sql, params(self.wit, given),
                                                        durable, into=into)
                    except SqlError as e:
                        failed = ("READ_ONLY" if seen.refused else "SQL", str(e))
            else:
                columns, _ = self.db.guest_exec(sql, params(self.wit, given), durable,
                                                into=into)
        except SqlError as e:
            failed = ("SQL", str(e))
        except StorageError as e:
            failed = ("STORAGE", storage_reason(e))
        if failed is not None:
            raise self._failed(*failed)
        return columns

    def _failed(self, kind: str, message: str) -> Exception:
        self.last = (kind, message)
        return self.err(message)

    def _rows(self, sql: str, given: list[Any], durable: bool) -> Any:
        into = _Values(self.wit, self.db.max_result_bytes)
        columns = self._run(sql, given, durable, into)
        conn = self.db.conn
        return self.wit.Rows(columns=columns, rows=into.rows, changes=conn.changes(),
                             last_insert_rowid=conn.last_insert_rowid())

    def answers(self) -> dict[str, Callable[..., Any]]:
        """The interface's functions, by the bindings' names."""
        def query_packed(sql: str, given: list[Any]) -> str:
            into = Packed(self.db.max_result_bytes)
            return into.text(self._run(sql, given, False, into))

        def exec_write(sql: str, given: list[Any], durable: bool) -> int:
            self._run(sql, given, durable, Dropped(self.db.max_result_bytes))
            return int(self.db.conn.changes())

        def last_error() -> Any:
            if self.last is None:
                return None
            return self.wit.SqlError(kind=self.wit.SqlErrorKind[self.last[0]],
                                     message=self.last[1])

        return {"exec": lambda sql, p: self._rows(sql, p, False),
                "exec_durable": lambda sql, p: self._rows(sql, p, True),
                "query_packed": query_packed, "exec_write": exec_write,
                "last_error": last_error}

    def end_event(self) -> None:
        """What the host does as an event ends: an open transaction is rolled back."""
        self.db.end_event()
        self.read_only = False
        self.last = None

    def close(self) -> None:
        self.db.close()
