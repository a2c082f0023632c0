"""The instance's emitted-event stream: the SQL behind `wf.emit` and the `events` route.

    _wk_wf_emit   one row per event emitted: its offset (0, 1, 2, ...), name, payload
                  (stored JSON, plain or tagged), the run and position that emitted it,
                  and when

An emit is one statement: the insert of its stream row, whose trigger writes the journal
entry (kind M, kinds.py) at its position in the same statement. So the stream and the
journal can never disagree after a crash (an event kept with no entry would be emitted
again by the next run; an entry with no event would be lost), and the emit needs no
transaction of its own. It is a plain write: the run's next durable write syncs it, as
for the deterministic helpers (helper_records.py).

The stream is kept per instance, not per run: its offsets go on across the runs of an
id (a start after retention begins a new actor, and so a new stream).
"""

from __future__ import annotations

import json
from typing import Any

from ..backend import Backend
from ..errors import StoreFault
from .kinds import EMITTED

TABLE = "_wk_wf_emit"

# Created with the other tables for a new instance (schema.py). An instance created by
# an older SDK has none: its first emit makes them (`Stream.append`), and a read finds
# none and answers no events.
SCHEMA = (
    f"""CREATE TABLE IF NOT EXISTS {TABLE} (
        seq INTEGER PRIMARY KEY,
        name TEXT NOT NULL,
        payload TEXT NOT NULL,
        tagged INTEGER NOT NULL,
        run_id TEXT NOT NULL,
        pos INTEGER NOT NULL,
        at INTEGER NOT NULL)""",
    # The journal entry rides on the stream's insert: one statement, atomic. Its
    # event_seq is the offset, for the steps route.
    f"""CREATE TRIGGER IF NOT EXISTS _wk_wf_emit_entry AFTER INSERT ON {TABLE} BEGIN
        INSERT INTO _wk_wf_step (pos, kind, name, result, event_seq, updated_at)
        VALUES (NEW.pos, '{EMITTED}', NEW.name, 'null', NEW.seq, NEW.at); END""",
)

_APPEND = (f"/*wk:emit*/ INSERT INTO {TABLE} (seq, name, payload, tagged, run_id, pos, at)"
           f" VALUES ((SELECT coalesce(max(seq) + 1, 0) FROM {TABLE}), ?, ?, ?, ?, ?, ?)")
_READ = (f"SELECT seq, name, payload, tagged, at, pos, run_id FROM {TABLE}"
         " WHERE seq >= ? ORDER BY seq LIMIT ?")
_EXISTS = f"SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '{TABLE}'"


class Stream:
    """The stream's statements over a Backend. `ready`: the table is known to exist."""

    __slots__ = ("db", "ready")

    def __init__(self, db: Backend) -> None:
        self.db = db
        self.ready = False

    def ensure(self) -> None:
        """Make the table and its trigger if this instance has none (an older SDK's)."""
        if not self.ready:
            self.db.exec("/*wk:schema*/ BEGIN; " + "; ".join(SCHEMA) + "; COMMIT")
            self.ready = True

    def append(self, name: str, text: str, tagged: bool, run_id: str, pos: int,
               now: int) -> None:
        """Emit: the stream's row and the journal entry at `pos`, in one plain write.

        Raises StoreFault."""
        params = (name, text, int(tagged), run_id, pos, now)
        try:
            self.db.exec(_APPEND, params)
            self.ready = True
        except StoreFault:
            if self.ready:
                raise
            # Most likely an instance made before the stream existed: make it, and try
            # once more (any other fault comes back the same). Asking first instead
            # would cost every runner's first emit a statement.
            self.ensure()
            self.db.exec(_APPEND, params)

    def exists(self) -> bool:
        """Whether the instance has a stream table (a read: nothing is made)."""
        if not self.ready:
            self.ready = self.db.query_row(_EXISTS) is not None
        return self.ready

    def read(self, start: int, limit: int) -> list[tuple[Any, ...]]:
        """Up to `limit` events from offset `start`, in order: (offset, name, payload
        text, tagged, at, pos, run_id)."""
        if not self.exists():
            return []
        packed = self.db.query_packed(_READ, (start, limit))
        return [tuple(r) for r in json.loads(packed)[1:]]
