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

from typing import Any, NamedTuple

from ..backend import atomically
from ..core.kinds import CUT_OPEN, GROUP_OPEN, STEP_RETRYING
from ..core.schema import ENTRY_COLUMNS
from ..core.store import Store
from ..errors import StoreFault

TABLE = f"""CREATE TABLE IF NOT EXISTS _wk_wf_branch (
        pos INTEGER NOT NULL,
        idx INTEGER NOT NULL,
        {ENTRY_COLUMNS},
        PRIMARY KEY (pos, idx)) WITHOUT ROWID"""

# The table is made with the first group's entry, not by the schema: an instance made by
# an older SDK has none, and one that never groups never needs it.
_OPEN = ("/*wk:group-open*/ INSERT INTO _wk_wf_step (pos, kind, name, updated_at)"
         " VALUES (?, ?, ?, ?)")
_LOAD = ("SELECT idx, kind, name, result, attempts, error, next_attempt_at, wake_at, cut"
         " FROM _wk_wf_branch WHERE pos = ? ORDER BY idx")
_PUT = ("/*wk:branch*/ INSERT INTO _wk_wf_branch (pos, idx, kind, name, result, attempts,"
        " error, next_attempt_at, wake_at, event_seq, updated_at, cut)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (pos, idx) DO UPDATE SET"
        " kind = excluded.kind, result = excluded.result, attempts = excluded.attempts,"
        " error = excluded.error, next_attempt_at = excluded.next_attempt_at,"
        " wake_at = coalesce(excluded.wake_at, wake_at), event_seq = excluded.event_seq,"
        " updated_at = excluded.updated_at, cut = excluded.cut")


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
    cut: str | None  # its attempt's cut (core/kinds.py's CUT_OPEN), None if it ended


class BranchRows:
    """The rows of the branches of the group at `pos`, `_wk_wf_branch`: its pending
    entry's opening, each branch's row written as it moves, and their reading."""

    def __init__(self, store: Store, pos: int) -> None:
        self.store = store
        self.db = store.db
        self.pos = pos

    def open(self, name: str, now: int) -> None:
        """The group's pending entry, and the table its branches' rows go in."""
        self.db.exec("/*wk:group-table*/ " + TABLE)
        self.db.exec(_OPEN, (self.pos, GROUP_OPEN, name, now))

    def load(self) -> dict[int, Row]:
        rows = (Row(*r) for r in self.store.rows(_LOAD, (self.pos,)))
        return {row.idx: row for row in rows}

    def put(self, idx: int, kind: str, name: str, now: int, *, result: str | None = None,
            attempts: int = 0, error: str | None = None, next_attempt_at: int | None = None,
            wake_at: int | None = None, event_seq: int | None = None,
            cut: str | None = None) -> None:
        self.db.exec(_PUT, (self.pos, idx, kind, name, result, attempts, error,
                            next_attempt_at, wake_at, event_seq, now, cut))

    def count_attempt(self, idx: int, name: str, attempt: int, error: str, retry_at: int,
                      now: int) -> None:
        """A step branch's attempt, counted before its function runs (as a step's is):
        open until it ends."""
        self.put(idx, STEP_RETRYING, name, now, attempts=attempt, error=error,
                 next_attempt_at=retry_at, cut=CUT_OPEN)

    def take_event(self, idx: int, kind: str, name: str, seq: int, payload: str,
                   deadline: int | None, now: int) -> None:
        """Move event `seq` into branch `idx`'s row, in one transaction."""
        def take() -> None:
            self.put(idx, kind, name, now, result=payload, wake_at=deadline, event_seq=seq)
            if self.db.exec("DELETE FROM _wk_wf_event WHERE seq = ?", (seq,)) != 1:
                raise StoreFault(f"event {seq} vanished while being taken")

        atomically(self.db, take, durable=False)

    def wake(self, wake_at: int | None, now: int) -> None:
        """The open group's earliest wake time, on its entry (the steps route shows it)."""
        self.db.exec("UPDATE _wk_wf_step SET wake_at = ?, updated_at = ? WHERE pos = ?",
                     (wake_at, now, self.pos))

    def oldest_event(self, name: str, until: int | None) -> tuple[int, str, bool] | None:
        return self.store.oldest_event(name, until if until is not None else 2**62)


def outcome(kind: str, result: Any) -> list[Any]:
    """A settled branch as its group's entry records it: [kind, result]."""
    return [kind, result]
