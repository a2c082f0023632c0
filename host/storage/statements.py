"""Running one guest statement on a connection, and what its failure is told as."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

import apsw

from . import policy as sql_policy

SqlValue = None | int | float | str | bytes


def run(conn: apsw.Connection, sql: str, params: Sequence[SqlValue], can_cache: bool
        ) -> tuple[list[str], list[tuple[Any, ...]]]:
    cursor = conn.cursor()
    cursor.execute(sql, params, can_cache=can_cache)
    columns: list[str] = []
    rows: list[tuple[Any, ...]] = []
    # apsw runs ";"-separated statements one after another through one cursor; the
    # description must be read while the statement is current.
    for row in cursor:
        if not columns:
            columns = [d[0] for d in cursor.getdescription()]
        rows.append(row)
    if not columns:
        with contextlib.suppress(apsw.ExecutionCompleteError):
            columns = [d[0] for d in cursor.getdescription()]
    return columns, rows


def one_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}".rstrip(": ")


def explain(e: apsw.Error, max_value_bytes: int) -> str:
    """What a guest is told of SQLite's failure: one line, naming the cap it met."""
    if isinstance(e, apsw.InterruptError):
        return ("interrupted: the statement ran past the event's wall-clock budget "
                "(--wall-budget-ms)")
    if isinstance(e, apsw.TooBigError):
        return (f"TooBigError: a string, blob or statement over the cap (values up to "
                f"{max_value_bytes} bytes: --db-max-value-mb; statements up to "
                f"{sql_policy.SQL_MAX_BYTES} bytes)")
    if isinstance(e, apsw.NoMemError):
        return ("NoMemError: SQLite's memory for this process is at its limit "
                "(--sql-memory-mb); the statement was stopped")
    return one_line(e)
