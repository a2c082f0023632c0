"""The SQL of groups: the open group's position and its branches' rows, `_wk_wf_branch`.

A group takes one position of the journal. While its branches go on, that position holds
a pending entry (kind g) and each branch that has begun has a row of its own here, keyed
by (pos, idx): its kind (the letters of core/kinds.py: p, w, q pending; S, T, X, Z, E, F, O
final), its attempts and error, its wake time. When the group settles, its final entry
(kind G) records every branch's outcome at once, so a replay reads one position and
never this table; the rows stay, for operators, until the instance goes.

None of these writes is synced by itself: the run's last write (end_run or finish, an
exec_durable) syncs them all, one fsync per event however many branches moved. A crash
before it loses the run's branch writes together (WAL keeps their order), and the next
run does them again: a step branch whose result was lost runs again, as a step would.
"""

from __future__ import annotations

import contextlib
from typing import Any, NamedTuple

from ..core.attempt import CUT
from ..core.kinds import GROUP_OPEN, STEP_RETRYING
from ..core.store import Store
from ..errors import StoreFault

TABLE = """CREATE TABLE IF NOT EXISTS _wk_wf_branch (
        pos INTEGER NOT NULL,
        idx INTEGER NOT NULL,
        kind TEXT NOT NULL,
        name TEXT NOT NULL,
        result TEXT,
        attempts INTEGER NOT NULL DEFAULT 0,
        error TEXT,
        next_attempt_at INTEGER,
        wake_at INTEGER,
        event_seq INTEGER,
        updated_at INTEGER NOT NULL,
        PRIMARY KEY (pos, idx)) WITHOUT ROWID"""

# The table is made with the first group's entry, not by the schema: an instance made by
# an older SDK has none, and one that never groups never needs it.
_OPEN = ("/*wk:group-open*/ INSERT INTO _wk_wf_step (pos, kind, name, updated_at)"
         " VALUES (?, ?, ?, ?)")
# With each row, the instance's error: where a cut's reason is (store.note_trap's).
_LOAD = ("SELECT idx, kind, name, result, attempts, error, next_attempt_at, wake_at,"
         " (SELECT error FROM _wk_wf) FROM _wk_wf_branch WHERE pos = ? ORDER BY idx")
_CUT_PREFIX = "its last event was cut: "
_NOTE_CUT = "/*wk:branch-cut*/ UPDATE _wk_wf_branch SET error = ? WHERE pos = ? AND idx = ?"
_PUT = ("/*wk:branch*/ INSERT INTO _wk_wf_branch (pos, idx, kind, name, result, attempts,"
        " error, next_attempt_at, wake_at, event_seq, updated_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (pos, idx) DO UPDATE SET"
        " kind = excluded.kind, result = excluded.result, attempts = excluded.attempts,"
        " error = excluded.error, next_attempt_at = excluded.next_attempt_at,"
        " wake_at = coalesce(excluded.wake_at, wake_at), event_seq = excluded.event_seq,"
        " updated_at = excluded.updated_at")


class Row(NamedTuple):
    """A branch's row, as `load` reads it."""

    idx: int
    kind: str
    name: str
    result: str | None
    attempts: int
    error: str | None
    next_attempt_at: int | None
    wake_at: int | None


class Branches:
    def __init__(self, store: Store, pos: int) -> None:
        self.store = store
        self.db = store.db
        self.pos = pos

    def open(self, name: str, now: int) -> None:
        """The group's pending entry, and the table its branches' rows go in."""
        self.db.exec("/*wk:group-table*/ " + TABLE)
        self.db.exec(_OPEN, (self.pos, GROUP_OPEN, name, now))

    def load(self) -> dict[int, Row]:
        rows = {}
        for r in self.store.rows(_LOAD, (self.pos,)):
            row = Row(*r[:8])
            rows[row.idx] = self._note_cut(row, r[8])
        return rows

    def _note_cut(self, row: Row, instance_error: object) -> Row:
        """A step branch's attempt that was cut still holds the error it was counted
        with: the cut's reason goes on it, as store.note_trap puts it on a step's (the
        instance's error says it until the run ends), for its history and its final
        error."""
        n = row.attempts
        if (row.kind != STEP_RETRYING or n == 0 or row.error != CUT.format(n=n)
                or not isinstance(instance_error, str)
                or not instance_error.startswith(_CUT_PREFIX)):
            return row
        error = f"attempt {n} was cut: {instance_error.removeprefix(_CUT_PREFIX)}"
        self.db.exec(_NOTE_CUT, (error, self.pos, row.idx))
        return row._replace(error=error)

    def put(self, idx: int, kind: str, name: str, now: int, *, result: str | None = None,
            attempts: int = 0, error: str | None = None, next_attempt_at: int | None = None,
            wake_at: int | None = None, event_seq: int | None = None) -> None:
        self.db.exec(_PUT, (self.pos, idx, kind, name, result, attempts, error,
                            next_attempt_at, wake_at, event_seq, now))

    def count_attempt(self, idx: int, name: str, attempt: int, error: str, retry_at: int,
                      now: int) -> None:
        """A step branch's attempt, counted before its function runs (as a step's is)."""
        self.put(idx, STEP_RETRYING, name, now, attempts=attempt, error=error,
                 next_attempt_at=retry_at)

    def take_event(self, idx: int, kind: str, name: str, seq: int, payload: str,
                   deadline: int | None, now: int) -> None:
        """Move event `seq` into branch `idx`'s row, in one transaction."""
        self.db.exec("BEGIN IMMEDIATE")
        try:
            self.put(idx, kind, name, now, result=payload, wake_at=deadline, event_seq=seq)
            if self.db.exec("DELETE FROM _wk_wf_event WHERE seq = ?", (seq,)) != 1:
                raise StoreFault(f"event {seq} vanished while being taken")
            self.db.exec("COMMIT")
        except BaseException:
            with contextlib.suppress(StoreFault):
                self.db.exec("ROLLBACK")
            raise

    def wake(self, wake_at: int | None, now: int) -> None:
        """The open group's earliest wake time, on its entry (the steps route shows it)."""
        self.db.exec("UPDATE _wk_wf_step SET wake_at = ?, updated_at = ? WHERE pos = ?",
                     (wake_at, now, self.pos))

    def oldest_event(self, name: str, until: int | None) -> tuple[int, str, bool] | None:
        return self.store.oldest_event(name, until if until is not None else 2**62)


def outcome(kind: str, result: Any) -> list[Any]:
    """A settled branch as its group's entry records it: [kind, result]."""
    return [kind, result]
