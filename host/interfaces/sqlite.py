"""The `sqlite` WIT interface: guest SQL for the running event, and its values across
the boundary."""

from __future__ import annotations

import base64
import contextlib
import json
from collections.abc import Callable
from typing import Any

from wasmtime.component import Variant

from ..storage.actordb import ActorDb, SqlError, StorageError
from ..storage.readonly import reads_only
from ..storage.statements import SqlValue, one_line
from .ports import E, Events
from .records import record


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


def rows_record(db: ActorDb, columns: list[str], rows: list[tuple[Any, ...]]) -> Any:
    return record(columns=columns, rows=[[value_to_wit(v) for v in row] for row in rows],
                  changes=db.conn.changes(),
                  **{"last-insert-rowid": db.conn.last_insert_rowid()})


def _blob_json(v: Any) -> Any:
    if isinstance(v, bytes | bytearray | memoryview):
        return {"b64": base64.b64encode(bytes(v)).decode("ascii")}
    raise TypeError(f"cannot pack {type(v).__name__}")


def pack_rows(columns: list[str], rows: list[tuple[Any, ...]]) -> str:
    """The `query-packed` encoding: [columns, row, row, ...]; blobs as {"b64": ...}."""
    return json.dumps([columns, *rows], separators=(",", ":"), default=_blob_json)


# -- the `sqlite` interface ---------------------------------------------------------------
NARROWED = ("interrupted: the statement ran past the deadline the event set itself "
            "(lifecycle.narrow-deadline)")
_ANY_SQL = contextlib.nullcontext()  # the statements of an event that may write


def register(root: Any, guard: Any, host: Events[E]) -> None:
    current = host.current_event

    def _guest_exec(sql: str, params: list[Variant], durable: bool
                    ) -> tuple[ActorDb, list[str], list[tuple[Any, ...]]]:
        """Run guest SQL for the running event, within its deadline.

        A statement's work is CPU, like the guest's, and keeps the event's run slot; only
        the fsync of a durable write waits on the disk and gives the slot to another
        event. (Giving it up around every statement cost a cold wake many context
        switches.)"""
        ev = current()
        db = ev.slot.require_db()
        try:
            with reads_only(db) if ev.read_only else _ANY_SQL:
                columns, rows = db.guest_exec(sql, params_from_wit(params), durable,
                                              ev.bound, io_wait=ev.gate.waiting,
                                              loan=ev.loan())
        except SqlError as e:
            if str(e).startswith("interrupted:") and ev.cut_by_limit():
                raise SqlError(NARROWED) from None
            raise
        return db, columns, rows

    with root.add_instance("wk:host/sqlite@0.1.0") as iface:
        for name, fn in _functions(_guest_exec).items():
            iface.add_func(name, guard(fn))


GuestExec = Callable[[str, list[Variant], bool],
                     tuple[ActorDb, list[str], list[tuple[Any, ...]]]]
Answer = Callable[[ActorDb, list[str], list[tuple[Any, ...]]], Any]


def _functions(guest_exec: GuestExec) -> dict[str, Callable[..., Any]]:
    """The interface's functions, by WIT name, over `guest_exec`."""

    def _attempt(sql: str, params: list[Variant], durable: bool
                 ) -> tuple[ActorDb, list[str], list[tuple[Any, ...]]] | str:
        """`guest_exec`'s result, or the error's text: the guest's to handle (a
        workflow answers 503 "storage"), never a trap."""
        try:
            return guest_exec(sql, params, durable)
        except SqlError as e:
            return str(e)
        except OSError as e:  # the fsync itself failed: the write may not be durable
            return f"durable sync failed: {e}"
        except StorageError as e:  # SQLite failed around the statement: a COMMIT, a new file
            return storage_reason(e)

    def _exec_typed(sql: str, params: list[Variant], durable: bool,
                    answer: Answer = rows_record) -> Any:
        """`exec`'s result: `answer(...)`, or the error's text."""
        out = _attempt(sql, params, durable)
        return out if isinstance(out, str) else answer(*out)

    def _exec(_store: Any, sql: str, params: list[Variant]) -> Any:
        return _exec_typed(sql, params, durable=False)

    def _exec_durable(_store: Any, sql: str, params: list[Variant]) -> Any:
        return _exec_typed(sql, params, durable=True)

    def _query_packed(_store: Any, sql: str, params: list[Variant]) -> str | Variant:
        out = _attempt(sql, params, False)
        if isinstance(out, str):
            return Variant("err", out)
        _db, columns, rows = out
        return Variant("ok", pack_rows(columns, rows))

    def _exec_write(_store: Any, sql: str, params: list[Variant], durable: bool) -> int | str:
        return _exec_typed(sql, params, durable, _changes)  # type: ignore[no-any-return]

    return {"exec": _exec, "exec-durable": _exec_durable, "query-packed": _query_packed,
            "exec-write": _exec_write}


def storage_reason(e: BaseException) -> str:
    """A storage failure's first cause, in one line: a COMMIT's FullError rather than the
    failed ROLLBACK after it."""
    while isinstance(e.__context__, StorageError):
        e = e.__context__
    return one_line(e)


def _changes(db: ActorDb, _columns: list[str], _rows: list[tuple[Any, ...]]) -> int:
    return int(db.conn.changes())
