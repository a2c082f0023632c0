"""A step's own SQL, committed with its recorded result: `wf.step(name, f, tx=...)`.

    LEDGER = workflow.Tables(
        "CREATE TABLE IF NOT EXISTS ledger (entry TEXT NOT NULL, amount INTEGER NOT NULL)")

    def book(db: workflow.TxDb) -> int:
        db.exec("INSERT INTO ledger VALUES (?, ?)", ("order-42", 1200))
        return db.scalar("SELECT sum(amount) FROM ledger")

    total = wf.step("book", book, tx=LEDGER)

An attempt of a tx step is one transaction of the actor's database: its function's
writes, through the handle it gets (`TxDb`), and the step's recorded result commit
together, or neither does. In order (each statement tagged for wkhost's crash points):

    wk:attempt    the attempt counted, with its watchdog alarm (committed before: a trap
                  inside the attempt still counts)
    wk:tx-begin   BEGIN IMMEDIATE, and a savepoint the runner checks before it records
    wk:tx-tables  the step's `Tables`, once per warm cache of the instance
    ...           the function's statements
    wk:tx-check   the transaction is still the runner's (the savepoint is there)
    wk:result     the recorded result, inside the transaction
    wk:tx-commit  COMMIT: a plain commit, made durable by the run's last write together
                  with every other result of the run (group commit)

An exception from the function (or an SQL error, even one it caught) rolls the attempt
back and is the attempt's error, retried with the step's backoff as usual. A trap, a cut
or a host crash anywhere before COMMIT leaves neither: SQLite drops the open transaction
(the host rolls back what an event leaves open). A replay never runs the function again.

What the function may not do, refused with `TxRefused` (a CodeError: the instance parks,
naming the step, since retrying cannot fix the code): a statement that begins or ends a
transaction, one that names `_wk_` tables, several statements in one call, the handle
used once its function has returned. Rules that cannot be enforced from here
(docs/workflows.md): no calls to other actors and no fetches inside the function (the
rollback cannot undo what they do), and no SQL through `wkguest.sqlite` but the handle's.
A COMMIT or ROLLBACK that way ends the runner's transaction: the check before the record
sees it, and the instance parks with the step unrecorded.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from wkguest.codec import SqlValue, decode_packed
from wkguest.errors import SqliteError

from ..backend import Backend, Param
from ..errors import CodeError, StoreFault
from .sqlscan import names_reserved, refusal, statements

_BEGIN = "/*wk:tx-begin*/ BEGIN IMMEDIATE; SAVEPOINT _wk_tx"
_CHECK = "/*wk:tx-check*/ RELEASE _wk_tx"
_COMMIT = "/*wk:tx-commit*/ COMMIT"
_ROLLBACK = "/*wk:tx-rollback*/ ROLLBACK"
_TABLES_TAG = "/*wk:tx-tables*/ "
_IDEMPOTENT = re.compile(r"\s*CREATE\s+(?:UNIQUE\s+INDEX|VIRTUAL\s+TABLE|TABLE|INDEX|VIEW|"
                         r"TRIGGER)\s+IF\s+NOT\s+EXISTS\b", re.I)


class TxRefused(CodeError):
    """A tx step's function used its database handle in a way that would break the
    transaction it shares with the step's record (see the module's doc)."""


class Tables:
    """The instance's own tables that a tx step needs: `CREATE ... IF NOT EXISTS`
    statements, made inside the step's transaction before its function runs (once per
    warm cache of the instance; they are idempotent, so an instance started before a
    deploy that adds a table gets it at its next tx step).

    Raises ValueError (at import, so at build time) for a statement of another kind, or
    one that names `_wk_` tables."""

    __slots__ = ("statements",)

    def __init__(self, *scripts: str) -> None:
        found = [s for script in scripts for s in statements(script)]
        for text, code in found:
            if _IDEMPOTENT.match(code) is None:
                raise ValueError(
                    "workflow.Tables takes only CREATE TABLE|INDEX|VIEW|TRIGGER IF NOT EXISTS "
                    f"statements (they run again in every new cache of the instance), not "
                    f"{text[:80]!r}")
            if names_reserved(code):
                raise ValueError(f"workflow.Tables: {text[:80]!r} names _wk_ tables, which "
                                 "are the runner's and the host's")
        self.statements = tuple(text for text, _ in found)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Tables) and other.statements == self.statements

    def __hash__(self) -> int:
        return hash(self.statements)

    def __repr__(self) -> str:
        return f"Tables({len(self.statements)} statement(s))"


NO_TABLES = Tables()


def tables_of(tx: object, keyed: bool) -> Tables | None:
    """The step option `tx` as the Tables to make (None: not a tx step). Raises
    TypeError, naming the option, for anything but True, False or a Tables."""
    if tx is False:
        return None
    if tx is not True and not isinstance(tx, Tables):
        raise TypeError(f"step option 'tx' must be True, False or a workflow.Tables, not "
                        f"{tx!r} ({type(tx).__name__})")
    if keyed:
        raise TypeError("step option 'tx' does not go with step_keyed: a tx step's writes "
                        "commit once, with its record, and need no idempotency key "
                        "(use wf.step(name, f, tx=...))")
    return NO_TABLES if tx is True else tx


class TxDb:
    """The handle a tx step's function gets: the actor's database, inside the attempt's
    transaction. Parameters are as `wkguest.sqlite`'s (None, int, float, str, bytes).

    Each call raises TxRefused for a statement it refuses (see the module's doc), and
    SqliteError if the statement fails; after a failure, every later call raises it again
    and the attempt is rolled back, even if the function catches it (SQLite may have
    ended the transaction on some errors)."""

    __slots__ = ("_db", "_step", "_open", "_failed")

    def __init__(self, db: Backend, step: str) -> None:
        self._db = db
        self._step = step
        self._open = True
        self._failed: SqliteError | None = None

    def exec(self, sql: str, params: Sequence[Param] = ()) -> int:
        """Run one statement; return how many rows it changed."""
        self._admit(sql)
        return int(self._call(self._db.exec, sql, params))

    def query(self, sql: str, params: Sequence[Param] = ()) -> list[tuple[SqlValue, ...]]:
        """The rows of one statement (a SELECT, or a write with RETURNING) as tuples;
        blobs as bytes."""
        self._admit(sql)
        return decode_packed(self._call(self._db.query_packed, sql, params))[1]

    def scalar(self, sql: str, params: Sequence[Param] = ()) -> SqlValue:
        """The first column of the first row, or None if there are no rows."""
        self._admit(sql)
        row = self._call(self._db.query_row, sql, params)
        return None if not row else row[0]

    def _admit(self, sql: object) -> None:
        if not self._open:
            self._refuse("the handle was used after its step's function returned")
        if not isinstance(sql, str):
            self._refuse(f"the SQL must be a str, not {type(sql).__name__}")
        why = refusal(sql)
        if why is not None:
            self._refuse(f"{why}: {sql[:80]!r}")
        self.raise_failure()

    def _refuse(self, why: str) -> NoReturn:
        raise TxRefused(f"wf.step({self._step!r}, tx=...): {why}")

    def _call(self, op: Callable[..., Any], sql: str, params: Sequence[Param]) -> Any:
        try:
            return op(sql, params)
        except StoreFault as e:
            # The Backend raises its StoreFault while handling the SDK's SqliteError: the
            # statement's kind is that error's (a cut at the step's timeout, say).
            was = e.__context__
            kind = was.kind if isinstance(was, SqliteError) else "sql"
            self._failed = SqliteError(str(e).removeprefix("sqlite: "), kind)
            raise SqliteError(str(self._failed), kind) from None  # the kept one holds no frames

    def raise_failure(self) -> None:
        """Raise the attempt's SQL error again, if a statement failed."""
        if self._failed is not None:
            raise SqliteError(f"{self._failed} (an earlier statement of this attempt failed: "
                              "it is rolled back)", self._failed.kind)

    def close(self) -> None:
        """The function has returned: refuse any later use (a handle kept in a closure)."""
        self._open = False

    def make(self, tables: Tables) -> None:
        """Make `tables` (already checked by Tables)."""
        for text in tables.statements:
            self._call(self._db.exec, _TABLES_TAG + text, ())


class Transaction:
    """One attempt of a tx step, as one transaction (see the module's doc). `made` is
    the set of Tables already made in this database while the instance's cache is warm."""

    __slots__ = ("_db", "_step", "_tables", "_made")

    def __init__(self, db: Backend, step: str, tables: Tables, made: set[Tables]) -> None:
        self._db = db
        self._step = step
        self._tables = tables
        self._made = made

    def run(self, fn: Callable[[TxDb], Any]) -> Any:
        """Begin, make the tables, and run `fn(handle)`; the transaction stays open for
        `commit`. Anything `fn` raises (or an SQL error it caught) rolls it back first."""
        self._db.exec(_BEGIN)
        handle = TxDb(self._db, self._step)
        try:
            if self._tables.statements and self._tables not in self._made:
                handle.make(self._tables)
            value = fn(handle)
            handle.raise_failure()
            self._check()
        except BaseException:
            self.rollback()
            raise
        finally:
            handle.close()
        return value

    def _check(self) -> None:
        try:
            self._db.exec(_CHECK)
        except StoreFault as e:
            raise TxRefused(
                f"wf.step({self._step!r}, tx=...): its transaction was ended inside the "
                "function (a COMMIT or ROLLBACK through wkguest.sqlite rather than the "
                f"step's handle?): {e}") from None

    def commit(self, record: Callable[[], None]) -> None:
        """Write the step's result (`record`) inside the transaction, and commit both."""
        try:
            record()
            self._db.exec(_COMMIT)
        except BaseException:
            self.rollback()
            raise
        if self._tables.statements:
            self._made.add(self._tables)

    def rollback(self) -> None:
        # If even ROLLBACK fails, the host rolls back what an event leaves open.
        with contextlib.suppress(StoreFault):
            self._db.exec(_ROLLBACK)
