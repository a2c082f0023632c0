"""Guest SQL in a read-only event (WIT `lifecycle.read-only`): a statement that would
change the database is refused before it runs.

SQLite judges it, statement by statement: the connection's exec tracer runs once each
statement of a script is prepared and before it takes a step, and refuses one whose
`sqlite3_stmt_readonly` is false (an INSERT behind a WITH, a write after a SELECT in a
script, a PRAGMA that sets a value). The tracer is on only while the guest's statement
runs, so the host's own statements before and after it are untouched.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import apsw

from .actordb import ActorDb


def refusal(what: str) -> str:
    """What the guest is told of `what` (a change) in a read-only event."""
    return f"read-only: {what}, and this event may only read from here on (lifecycle.read-only)"


READ_ONLY = refusal("the statement would change the database")


class Refusals:
    """What `reads_only` saw of its statement: whether it refused it. SQLite's own
    ReadOnlyError (a database it cannot write) reads the same, so the refusal is told
    by who raised it, not by its text."""

    __slots__ = ("refused",)

    def __init__(self) -> None:
        self.refused = False

    def refuse_writes(self, cursor: apsw.Cursor, _sql: str, _bindings: Any) -> bool:
        if cursor.is_readonly:
            return True
        self.refused = True
        raise apsw.ReadOnlyError(READ_ONLY)


@contextlib.contextmanager
def reads_only(db: ActorDb) -> Iterator[Refusals]:
    """Around one guest statement of a read-only event: yields what it refused.

    What the guest left for its next statement is settled first, as at the event's
    end: a schema image's script still to be replaced by the plain template, and
    attributes published before the event turned read-only."""
    db.end_speculation()
    if db.pending_attrs is not None and not db.conn.in_transaction:
        db.settle_attrs(commit=True)
    conn = db.conn
    before = conn.exec_trace
    seen = Refusals()
    conn.exec_trace = seen.refuse_writes
    try:
        yield seen
    finally:
        conn.exec_trace = before
