"""What the guest publishes (WIT `attributes`), on its way into its database: written
into its open transaction, or kept until its next statement, with which it commits (both
or neither), or until its event's end. The record's checks and form are
storage/attributes.py, its row storage/host_rows.py."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

import apsw

from . import host_rows
from .statements import SqlError, sql_error


class Db(Protocol):
    """What the published attributes need of the actor's database (storage/actordb.py)."""

    conn: apsw.Connection

    def host_exec(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]: ...


class Published:
    """One connection's attributes published and not yet committed (`pending`, encoded)."""

    def __init__(self, db: Db, max_value_bytes: int) -> None:
        self._db = db
        self._max_value_bytes = max_value_bytes
        self.pending: str | None = None

    def publish(self, encoded: str) -> None:
        """The guest published: into its open transaction, or kept for its next
        statement (`run_with`)."""
        if self._db.conn.in_transaction:
            host_rows.write_attrs(self._db, encoded)
            self.pending = None
        else:
            self.pending = encoded

    def published(self) -> str | None:
        """What the guest last published, committed or not yet."""
        if self.pending is not None:
            return self.pending
        return host_rows.read_attrs(self._db)

    def run_with(self, run: Callable[[], list[str]]) -> list[str]:
        """The guest's statement (`run`) and the attributes it published before, in one
        transaction: both commit, or neither (they wait for the next statement)."""
        conn, encoded = self._db.conn, self.pending
        if conn.in_transaction:  # cannot be: publish writes into an open one
            self.publish(str(encoded))
            return run()
        list(conn.execute("BEGIN"))
        try:
            host_rows.write_attrs(self._db, encoded)
            out = run()
        except SqlError as e:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            if "within a transaction" not in str(e):
                raise
            # A script that begins a transaction of its own: the attributes join it.
            out = run()
            if conn.in_transaction:
                self.publish(str(encoded))
            return out
        if conn.in_transaction:  # else the script ended it: they are written again later
            try:
                list(conn.execute("COMMIT"))
            except apsw.Error as e:
                if conn.in_transaction:  # a COMMIT that meets a full disk rolls back itself
                    conn.execute("ROLLBACK")
                raise sql_error(e, self._max_value_bytes) from None
            self.pending = None
        return out

    def settle(self, commit: bool) -> None:
        """At the event's end: attributes no statement took, committed on their own
        (`commit`), or dropped (the event trapped before the write they announced)."""
        encoded, self.pending = self.pending, None
        if encoded is not None and commit:
            host_rows.write_attrs(self._db, encoded)
