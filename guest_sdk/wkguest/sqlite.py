"""The actor's own SQLite database (WIT interface `sqlite`).

    rows = sqlite.exec("SELECT id, name FROM users WHERE id = ?", (7,))
    name = rows.scalar()
    for uid, name in sqlite.query("SELECT id, name FROM users"):   # many rows: faster
        ...

Parameters are None, int (bool counts as int), float, str, or bytes-like (a BLOB).
A transaction left open when the event ends is rolled back by the host.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from wkguest import _bindings as _b
from wkguest import readonly
from wkguest.codec import (
    S64_MAX,
    S64_MIN,
    SqlValue,
    decode_packed,
    from_wire,
    normalize_param,
    normalize_params,
    to_wire,
)
from wkguest.errors import SqlErrorKind, WkError

__all__ = ["Rows", "exec", "exec_durable", "query", "query_packed", "write"]


@dataclass
class Rows:
    """The result of `exec`: the last statement's columns and rows."""

    columns: list[str] = field(default_factory=list)
    rows: list[tuple[SqlValue, ...]] = field(default_factory=list)
    changes: int = 0
    last_insert_rowid: int = 0

    def first(self) -> tuple[SqlValue, ...] | None:
        """The first row, or None if there are none."""
        return self.rows[0] if self.rows else None

    def scalar(self) -> SqlValue:
        """The first column of the first row, or None if there are no rows."""
        row = self.first()
        return row[0] if row else None


def _to_value(v: SqlValue) -> Any:
    if v is None:
        return _b.sqlite.Value_Null()
    if isinstance(v, int):
        return _b.sqlite.Value_Integer(v)
    if isinstance(v, float):
        return _b.sqlite.Value_Real(v)
    if isinstance(v, str):
        return _b.sqlite.Value_Text(v)
    return _b.sqlite.Value_Blob(to_wire(v))


def _from_value(v: Any) -> SqlValue:
    if isinstance(v, _b.sqlite.Value_Null):
        return None
    if isinstance(v, _b.sqlite.Value_Blob):
        return from_wire(v.value)
    value: SqlValue = v.value
    return value


_NULL = _b.sqlite.Value_Null()  # no fields: one object serves every NULL
_INTEGER, _TEXT = _b.sqlite.Value_Integer, _b.sqlite.Value_Text


def _wit_params(params: Sequence[object]) -> list[Any]:
    # The exact common types inline, the rest through normalize_param: in a guest, Python
    # runs many times slower than natively, so every call and isinstance counts, and
    # the workflow runner passes six to eight params on every write.
    if isinstance(params, (str, bytes)):
        normalize_params(params)  # raises its TypeError
    out = []
    for p in params:
        t = type(p)
        if t is str:
            out.append(_TEXT(p))
        elif t is int and S64_MIN <= p <= S64_MAX:  # type: ignore[operator]
            out.append(_INTEGER(p))
        elif p is None:
            out.append(_NULL)
        else:
            out.append(_to_value(normalize_param(p)))
    return out


def _rows(r: Any) -> Rows:
    return Rows(
        columns=list(r.columns),
        rows=[tuple(_from_value(v) for v in row) for row in r.rows],
        changes=int(r.changes),
        last_insert_rowid=int(r.last_insert_rowid),
    )


def _error(e: Any) -> WkError:
    """The SDK's error for the host's `result` error `e`, of the kind the host gives
    beside it (WIT `sqlite.last-error`): read only when a call failed."""
    info = _b.sqlite.last_error()
    kind = "sql" if info is None else info.kind.name.lower().replace("_", "-")
    return readonly.sql_error(str(e.value), cast(SqlErrorKind, kind))


def exec(sql: str, params: Sequence[object] = ()) -> Rows:
    """Run `sql` (one statement, or several separated by ";": the last one's rows).

    The commit survives a process crash, not a power loss (see `exec_durable`).
    Raises SqliteError (SQL error, denial, size cap, busy; cut at a deadline; the
    database failed around it: its `kind` says which), TypeError (a bad parameter),
    ReadOnlyError (a statement that would change the database, while code that may only
    read runs: `wkguest.readonly`).
    """
    wit_params = _wit_params(params)
    try:
        return _rows(_b.sqlite.exec(sql, wit_params))
    except _b.Err as e:
        raise _error(e) from None


def exec_durable(sql: str, params: Sequence[object] = ()) -> Rows:
    """As `exec`, and the commit is fsynced before this returns (survives power loss).

    Raises SqliteError, TypeError, ReadOnlyError (as `exec`).
    """
    wit_params = _wit_params(params)
    try:
        return _rows(_b.sqlite.exec_durable(sql, wit_params))
    except _b.Err as e:
        raise _error(e) from None


def write(sql: str, params: Sequence[object] = (), durable: bool = False) -> int:
    """As `exec` (or `exec_durable` when `durable`), for a write whose rows you do not
    need: returns the number of rows it changed, and skips carrying a `Rows` back
    (a cheaper call, host and guest: docs/performance.md).

    Raises SqliteError, TypeError, ReadOnlyError (as `exec`).
    """
    wit_params = _wit_params(params)
    try:
        changes: int = _b.sqlite.exec_write(sql, wit_params, durable)
    except _b.Err as e:
        raise _error(e) from None
    return changes


def query_packed(sql: str, params: Sequence[object] = ()) -> str:
    """The raw `query-packed` JSON: [[columns...], [row values...], ...]; blobs as
    {"b64": ...}. Raises SqliteError, TypeError, ReadOnlyError (as `exec`)."""
    wit_params = _wit_params(params)
    try:
        packed: str = _b.sqlite.query_packed(sql, wit_params)
    except _b.Err as e:
        raise _error(e) from None
    return packed


def query(sql: str, params: Sequence[object] = ()) -> list[tuple[SqlValue, ...]]:
    """The rows of a read, as tuples (blobs as bytes): one string crosses the boundary
    instead of one value per cell, so prefer this for more than a few rows.

    Raises SqliteError, TypeError, ReadOnlyError (as `exec`), ValueError if the host's
    JSON is malformed.
    """
    _columns, rows = decode_packed(query_packed(sql, params))
    return rows
