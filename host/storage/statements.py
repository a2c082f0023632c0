"""Running one statement on an actor's connection, what its rows become, and what its
failure is told as.

`run` is the one path of every read of an actor's database, the guest's and the host's
own: whatever fails in it, SQLite or the host's work on what came back (text that is not
UTF-8, a result past its cap, any exception of the conversion), leaves it as an
apsw.Error, which every caller already takes for the statement's failure: the guest's
SQL error, never a trap; a host read's storage failure, never an unexpected error.

What the rows become is the caller's `Rows`: kept as they come (this class), dropped
(`Dropped`: a write's), or converted as they come (interfaces/sqlite.py's), their size
counted against a cap as they come, so that no result is gathered whole before it is
found too large.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from typing import Any

import apsw

from . import policy as sql_policy

SqlValue = None | int | float | str | bytes

_sizeof = sys.getsizeof
ROW_BYTES = 64  # a row's tuple, or list, of a few values

# What a database opened without a cap of its own (tests) keeps of one result: the
# default of --memory-mb, which the host passes instead (events/lifecycle.py).
DEFAULT_MAX_RESULT_BYTES = 256 << 20

INTERRUPTED = ("interrupted: the statement ran past the event's wall-clock budget "
               "(--wall-budget-ms)")


class SqlError(Exception):
    """An expected failure of guest SQL; its text goes back to the guest as the err.
    `interrupted`: the statement was cut at its deadline (its text says so to people)."""

    def __init__(self, message: str, interrupted: bool = False) -> None:
        super().__init__(message)
        self.interrupted = interrupted


class ResultError(apsw.Error):
    """The host could not make a result of what the statement returned: told to whoever
    ran it as the statement's failure, as SQLite's own are."""


class Interrupted(ResultError):
    """The host's own work on a result ran past the statement's deadline, where SQLite's
    interrupt could not cut it: told as SQLite's interrupt is."""




class Rows:
    """A statement's rows as they come, kept, their size counted against `cap` bytes.
    The size is what the host holds of them (each value's sys.getsizeof, and ROW_BYTES a
    row): at least what the guest's memory would need to receive them."""

    __slots__ = ("cap", "deadline", "size", "count", "rows")

    def __init__(self, cap: int = DEFAULT_MAX_RESULT_BYTES,
                 deadline: float = float("inf")) -> None:
        self.cap = cap
        self.deadline = deadline  # for work between rows that SQLite's interrupt cannot cut
        self.size = self.count = 0
        self.rows: list[Any] = []

    def clear(self) -> None:
        """Forget the rows of an earlier run (a statement run again)."""
        self.size = self.count = 0
        self.rows = []

    def add(self, row: tuple[Any, ...]) -> None:
        self.count += 1
        self.size += ROW_BYTES + sum(map(_sizeof, row))
        if self.size > self.cap:
            self.too_large()
        self.rows.append(row)

    def counted(self, size: int) -> None:
        self.size += size
        if self.size > self.cap:
            self.too_large()

    def too_large(self) -> None:
        raise ResultError(
            f"result too large: its rows passed {self.cap} bytes, as much as the event "
            f"may receive (its instance's memory, --memory-mb); ask for fewer or "
            f"smaller rows (LIMIT, fewer columns)")

    def in_time(self) -> None:
        """Between pieces of the host's own work on one row: SQLite's interrupt at the
        deadline (storage/watch.py) stops only the fetch of the next."""
        if time.monotonic() > self.deadline:
            raise Interrupted(INTERRUPTED)


class Dropped(Rows):
    """A write's rows, which nobody wants: counted by number only, never kept."""

    __slots__ = ()

    def add(self, row: tuple[Any, ...]) -> None:
        self.count += 1


def run(conn: apsw.Connection, sql: str, params: Sequence[Any], can_cache: bool,
        into: Rows) -> list[str]:
    """Run `sql` (one statement, or a ";"-separated script whose last rows are kept),
    its rows into `into`; the column names. Every failure is an apsw.Error."""
    if into.count:
        into.clear()
    try:
        return _run(conn, sql, params, can_cache, into)
    except apsw.Error:
        raise
    except UnicodeDecodeError as e:
        raise ResultError(
            f"text is not valid UTF-8: row {into.count + 1} of the result holds TEXT that "
            f"is not ({e.reason} at byte {e.start}); read it as a blob "
            f"(CAST(... AS BLOB))") from None
    except Exception as e:  # noqa: BLE001 (the host's work on guest data: the statement's)
        raise ResultError(f"the host failed on the statement or its result: "
                          f"{one_line(e)}") from e


def _run(conn: apsw.Connection, sql: str, params: Sequence[Any], can_cache: bool,
         into: Rows) -> list[str]:
    cursor = conn.cursor()
    cursor.execute(sql, params, can_cache=can_cache)
    columns: list[str] = []
    add = into.add
    # apsw runs ";"-separated statements one after another through one cursor; the
    # description must be read while the statement is current.
    for row in cursor:
        if not columns:
            columns = [d[0] for d in cursor.getdescription()]
        add(row)
    # (A statement without rows has no columns: once it has run, apsw describes none.)
    return columns


def one_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}".rstrip(": ")


def sql_error(e: apsw.Error, max_value_bytes: int) -> SqlError:
    """What a guest's statement that failed with `e` raises: `explain`'s text, and
    whether it was cut at its deadline (by SQLite, or between its rows)."""
    cut = isinstance(e, (apsw.InterruptError, Interrupted))
    return SqlError(explain(e, max_value_bytes), interrupted=cut)


def explain(e: apsw.Error, max_value_bytes: int) -> str:
    """What a guest is told of SQLite's failure: one line, naming the cap it met."""
    if isinstance(e, ResultError):
        return str(e)
    if isinstance(e, apsw.InterruptError):
        return INTERRUPTED
    if isinstance(e, apsw.TooBigError):
        return (f"TooBigError: a string, blob or statement over the cap (values up to "
                f"{max_value_bytes} bytes: --db-max-value-mb; statements up to "
                f"{sql_policy.SQL_MAX_BYTES} bytes)")
    if isinstance(e, apsw.NoMemError):
        return ("NoMemError: SQLite's memory for this process is at its limit "
                "(--sql-memory-mb); the statement was stopped")
    return one_line(e)
