"""The `sqlite` WIT interface: guest SQL for the running event, and its values across
the boundary."""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import sys
from collections.abc import Callable, Iterator
from operator import length_hint
from typing import Any

from wasmtime.component import Variant

from ..storage.actordb import ActorDb, SqlError, StorageError
from ..storage.readonly import Refusals, reads_only
from ..storage.statements import (
    DEFAULT_MAX_RESULT_BYTES,
    ROW_BYTES,
    Dropped,
    Rows,
    SqlValue,
    one_line,
)
from .ports import E, Events
from .records import record

_sizeof = sys.getsizeof


# -- conversion between WIT values and Python ---------------------------------------------
def params_from_wit(params: list[Variant]) -> list[SqlValue]:
    out: list[SqlValue] = []
    for v in params:
        tag = v.tag
        if tag == "blob":
            out.append(str(v.payload).encode("latin-1"))
        else:
            out.append(v.payload)  # null's payload is None
    return out


def value_to_wit(v: Any) -> Variant:
    if v is None:
        return Variant("null")
    if isinstance(v, int):
        return Variant("integer", v)
    if isinstance(v, float):
        return Variant("real", v)
    if isinstance(v, str):
        return Variant("text", v)
    return Variant("blob", bytes(v).decode("latin-1"))


def rows_record(db: ActorDb, columns: list[str], into: Rows) -> Any:
    return record(columns=columns, rows=into.rows, changes=db.conn.changes(),
                  **{"last-insert-rowid": db.conn.last_insert_rowid()})


class Typed(Rows):
    """`exec`'s rows, made WIT values as they come (storage/statements.py's `Rows`)."""

    __slots__ = ()

    def add(self, row: tuple[Any, ...]) -> None:
        self.count += 1
        self.size += ROW_BYTES + sum(map(_sizeof, row))
        if self.size > self.cap:
            self.too_large()
        self.rows.append([value_to_wit(v) for v in row])


def _blob_json(v: Any) -> Any:
    if isinstance(v, bytes | bytearray | memoryview):
        return {"b64": base64.b64encode(bytes(v)).decode("ascii")}
    raise TypeError(f"cannot pack {type(v).__name__}")


_dumps = json.JSONEncoder(separators=(",", ":"), default=_blob_json).encode

# Rows are packed a batch of about BATCH characters at a time, a row holding more than
# PIECE value by value, a long value piece by piece: no one call holds the GIL for long,
# and the cap and the deadline are seen between.
BATCH = 1 << 16
PIECE = 1 << 20
_PIECE_B64 = PIECE // 3 * 3  # base64 of whole 3-byte groups joins up exactly
_ZEROS = itertools.repeat(0)  # length_hint's default, for every value: a number's


class Packed(Rows):
    """The `query-packed` encoding, made as the rows come: [columns, row, row, ...], blobs
    as {"b64": ...}; its size is the encoding's."""

    __slots__ = ("parts", "batch", "batched")

    def __init__(self, cap: int = DEFAULT_MAX_RESULT_BYTES,
                 deadline: float = float("inf")) -> None:
        super().__init__(cap, deadline)
        self.parts: list[str] = []
        self.batch: list[tuple[Any, ...]] = []
        self.batched = 0

    def clear(self) -> None:
        super().clear()
        self.parts, self.batch, self.batched = [], [], 0

    def add(self, row: tuple[Any, ...]) -> None:
        self.count += 1
        chars = sum(map(length_hint, row, _ZEROS)) + 8 * len(row)  # a number: 8, say
        if chars > PIECE:
            self._flush()
            self._big(row)
            return
        self.batch.append(row)
        self.batched += chars
        if self.batched > BATCH:
            self._flush()

    def _flush(self) -> None:
        if self.batch:
            part = _dumps(self.batch)  # "[row,row,...]"
            self.batch, self.batched = [], 0
            self.counted(len(part) - 1)
            self.parts += (",", part[1:-1])

    def _big(self, row: tuple[Any, ...]) -> None:
        self.parts.append(",[")
        for i, v in enumerate(row):
            if i:
                self.parts.append(",")
            if isinstance(v, str) and len(v) > PIECE:
                self._pieces('"', (_dumps(v[at:at + PIECE])[1:-1]
                                   for at in range(0, len(v), PIECE)), '"')
            elif isinstance(v, bytes) and len(v) > PIECE:
                self._pieces('{"b64":"', (base64.b64encode(v[at:at + _PIECE_B64]).decode()
                                          for at in range(0, len(v), _PIECE_B64)), '"}')
            else:
                self._pieces("", iter((_dumps(v),)), "")
        self.parts.append("]")

    def _pieces(self, opening: str, pieces: Iterator[str], closing: str) -> None:
        self.parts.append(opening)
        for piece in pieces:
            self.in_time()
            self.counted(len(piece))
            self.parts.append(piece)
        self.parts.append(closing)

    def text(self, columns: list[str]) -> str:
        self._flush()
        return "".join(itertools.chain(("[", _dumps(columns)), self.parts, ("]",)))


def pack_rows(columns: list[str], rows: list[tuple[Any, ...]]) -> str:
    """`rows` in the `query-packed` encoding, uncapped (tests)."""
    packed = Packed(cap=sys.maxsize)
    for row in rows:
        packed.add(row)
    return packed.text(columns)


# -- the `sqlite` interface ---------------------------------------------------------------
NARROWED = ("interrupted: the statement ran past the deadline the event set itself "
            "(lifecycle.narrow-deadline)")
_ANY_SQL = contextlib.nullcontext()  # the statements of an event that may write

# The cases of WIT `sql-error-kind`, as a failure is told to the guest (`last-error`).
SQL, READ_ONLY, DEADLINE, NARROWED_DEADLINE, STORAGE = (
    "sql", "read-only", "deadline", "narrowed-deadline", "storage")


class GuestSqlError(SqlError):
    """A guest statement's failure, with its WIT `sql-error-kind`."""

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message, interrupted=kind in (DEADLINE, NARROWED_DEADLINE))
        self.kind = kind


def register(root: Any, guard: Any, host: Events[E]) -> None:
    current = host.current_event

    def _guest_exec(sql: str, params: list[Variant], durable: bool, kind: type[Rows]
                    ) -> tuple[ActorDb, list[str], Rows]:
        """Run guest SQL for the running event, within its deadline, its rows into a
        `kind`, capped at what the event's instance may receive.

        A statement's work is CPU, like the guest's, and keeps the event's run slot; only
        the fsync of a durable write waits on the disk and gives the slot to another
        event. (Giving it up around every statement cost a cold wake many context
        switches.)"""
        ev = current()
        db = ev.slot.require_db()
        into = kind(db.max_result_bytes, ev.bound)
        seen: Refusals | None = None
        try:
            with (reads_only(db) if ev.read_only else _ANY_SQL) as seen:
                columns, _ = db.guest_exec(sql, params_from_wit(params), durable,
                                           ev.bound, io_wait=ev.gate.waiting,
                                           loan=ev.loan(), into=into)
        except SqlError as e:
            if e.interrupted and ev.cut_by_limit():
                raise GuestSqlError(NARROWED, NARROWED_DEADLINE) from None
            why = DEADLINE if e.interrupted else READ_ONLY if seen and seen.refused else SQL
            raise GuestSqlError(str(e), why) from None
        return db, columns, into

    def _failed(kind: str, message: str) -> str:
        current().sql_error = (kind, message)
        return message

    def last_error(_store: Any) -> Any:
        failed = current().sql_error
        return None if failed is None else record(kind=failed[0], message=failed[1])

    with root.add_instance("wk:host/sqlite@0.1.0") as iface:
        for name, fn in _functions(_guest_exec, _failed).items():
            iface.add_func(name, guard(fn))
        iface.add_func("last-error", guard(last_error))


GuestExec = Callable[[str, list[Variant], bool, type[Rows]],
                     tuple[ActorDb, list[str], Rows]]
Answer = Callable[[ActorDb, list[str], Rows], Any]


def _functions(guest_exec: GuestExec, failed: Callable[[str, str], str]
               ) -> dict[str, Callable[..., Any]]:
    """The interface's functions, by WIT name, over `guest_exec`; `failed(kind,
    message)` notes a failure for `last-error` and gives its message back."""

    def _attempt(sql: str, params: list[Variant], durable: bool, kind: type[Rows]
                 ) -> tuple[ActorDb, list[str], Rows] | str:
        """`guest_exec`'s result, or the error's text: the guest's to handle (a
        workflow answers 503 "storage"), never a trap."""
        try:
            return guest_exec(sql, params, durable, kind)
        except SqlError as e:
            return failed(e.kind if isinstance(e, GuestSqlError) else SQL, str(e))
        except OSError as e:  # the fsync itself failed: the write may not be durable
            return failed(STORAGE, f"durable sync failed: {e}")
        except StorageError as e:  # SQLite failed around the statement: a COMMIT, a new file
            return failed(STORAGE, storage_reason(e))

    def _exec_typed(sql: str, params: list[Variant], durable: bool,
                    answer: Answer = rows_record, kind: type[Rows] = Typed) -> Any:
        """`exec`'s result: `answer(...)`, or the error's text."""
        out = _attempt(sql, params, durable, kind)
        return out if isinstance(out, str) else answer(*out)

    def _exec(_store: Any, sql: str, params: list[Variant]) -> Any:
        return _exec_typed(sql, params, durable=False)

    def _exec_durable(_store: Any, sql: str, params: list[Variant]) -> Any:
        return _exec_typed(sql, params, durable=True)

    def _query_packed(_store: Any, sql: str, params: list[Variant]) -> str | Variant:
        out = _attempt(sql, params, False, Packed)
        return Variant("err", out) if isinstance(out, str) else Variant("ok", _packed(*out))

    def _exec_write(_store: Any, sql: str, params: list[Variant], durable: bool) -> int | str:
        return _exec_typed(sql, params, durable, _changes, Dropped)  # type: ignore[no-any-return]

    return {"exec": _exec, "exec-durable": _exec_durable, "query-packed": _query_packed,
            "exec-write": _exec_write}


def storage_reason(e: BaseException) -> str:
    """A storage failure's first cause, in one line: a COMMIT's FullError rather than the
    failed ROLLBACK after it."""
    while isinstance(e.__context__, StorageError):
        e = e.__context__
    return one_line(e)


def _packed(_db: ActorDb, columns: list[str], into: Rows) -> str:
    assert isinstance(into, Packed)
    return into.text(columns)


def _changes(db: ActorDb, _columns: list[str], _rows: Rows) -> int:
    return int(db.conn.changes())
