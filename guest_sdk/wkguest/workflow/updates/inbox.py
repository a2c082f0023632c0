"""The SQL of updates: `_wk_wf_update`, one row per update an instance accepted, and its
inbox, the rows of `_wk_wf_event` named kinds.UPDATE_EVENT (an event table every
instance has, so the run's load counts the waiting ones without asking whether a table
is there: instance.py's LOAD).

    _wk_wf_update  id, name, state, arg, where it was taken (run_id, pos), its outcome
                   (result or error) and times

An update's states: accepted (in the inbox) → taken (its handler runs; its position is
`pos`) → completed or failed. One its validator refused was never recorded (update_route.py).

Durability: the acceptance is one durable transaction (the update's row, its inbox row),
committed before the route answers. The taking and the end are transactions of the run
(the journal entry with the rows it moves), made durable by the run's last write as a
step's result is: a crash before it loses them together, and the update is taken again.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, NamedTuple

from ..backend import Backend, Param
from ..core.kinds import TAGS, UPDATE_APPLIED, UPDATE_DONE, UPDATE_EVENT

ACCEPTED, TAKEN, COMPLETED, FAILED = "accepted", "taken", "completed", "failed"
DONE = frozenset({COMPLETED, FAILED})
# The ended updates an instance keeps, newest first, so that a long-lived one's table stays
# bounded: an older one's id is then unknown (404 unknown-update).
MAX_KEPT = 1000

TABLE = ("CREATE TABLE IF NOT EXISTS _wk_wf_update ("
         " id TEXT PRIMARY KEY, name TEXT NOT NULL, state TEXT NOT NULL,"
         " arg TEXT NOT NULL, arg_tagged INTEGER NOT NULL, run_id TEXT, pos INTEGER,"
         " result TEXT, result_tagged INTEGER NOT NULL DEFAULT 0, error TEXT,"
         " accepted_at INTEGER NOT NULL, done_at INTEGER) WITHOUT ROWID")
_THERE = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_wk_wf_update'"
_ROW = ("SELECT id, name, state, arg, arg_tagged, run_id, pos, result, result_tagged, error,"
        " accepted_at, done_at FROM _wk_wf_update WHERE id = ?")
_PUT = ("INSERT INTO _wk_wf_update (id, name, state, arg, arg_tagged,"
        f" accepted_at) VALUES (?, ?, '{ACCEPTED}', ?, ?, ?)")
_INBOX = "INSERT INTO _wk_wf_event (name, payload, tagged, received_at) VALUES (?, ?, 0, ?)"
_WAITING = ("SELECT e.seq, u.id, u.name, u.arg, u.arg_tagged FROM _wk_wf_event AS e"
            " JOIN _wk_wf_update AS u ON u.id = json_extract(e.payload, '$')"
            " WHERE e.name = ? ORDER BY e.seq")
_FORGET = ("DELETE FROM _wk_wf_update WHERE id IN (SELECT id FROM _wk_wf_update"
           f" WHERE state IN ('{COMPLETED}', '{FAILED}') ORDER BY done_at DESC, pos DESC"
           " LIMIT -1 OFFSET ?)")
_COUNT = "SELECT count(*) FROM _wk_wf_event WHERE name = ?"
_PUT_ENTRY = ("INSERT INTO _wk_wf_step (pos, kind, name, result, updated_at)"
              " VALUES (?, ?, ?, ?, ?)")


class Update(NamedTuple):
    """An update's row (`read`)."""

    id: str
    name: str
    state: str
    arg: str
    arg_tagged: bool
    run_id: str | None
    pos: int | None
    result: str | None
    result_tagged: bool
    error: str | None
    accepted_at: int
    done_at: int | None


class Waiting(NamedTuple):
    """An update in the inbox, oldest first (`waiting`)."""

    seq: int
    id: str
    name: str
    arg: str
    arg_tagged: bool


def read(db: Backend, id: str) -> Update | None:
    """Update `id`'s row; None if there is none (or no update came yet)."""
    if db.query_row(_THERE) is None:
        return None
    row = db.query_row(_ROW, (id,))
    if row is None:
        return None
    return Update(row[0], row[1], row[2], row[3], bool(row[4]), row[5], row[6], row[7],
                  bool(row[8]), row[9], row[10], row[11])


def count_waiting(db: Backend) -> int:
    row = db.query_row(_COUNT, (UPDATE_EVENT,))
    return 0 if row is None else int(row[0])


def accept_writes(id: str, name: str, text: str, tagged: bool, now: int
                  ) -> list[tuple[str, Sequence[Param]]]:
    """The statements that accept update `id`: its row, and its row in the inbox (the
    caller's transaction around them); and the ended updates past MAX_KEPT forgotten."""
    return [(TABLE, ()), (_FORGET, (MAX_KEPT,)), (_PUT, (id, name, text, int(tagged), now)),
            (_INBOX, (UPDATE_EVENT, json.dumps(id), now))]


def waiting(db: Backend) -> list[Waiting]:
    """The updates in the inbox, in the order they were accepted."""
    packed = json.loads(db.query_packed(_WAITING, (UPDATE_EVENT,)))
    return [Waiting(int(r[0]), str(r[1]), str(r[2]), str(r[3]), bool(r[4]))
            for r in packed[1:]]


def take(db: Backend, w: Waiting, run_id: str, pos: int, entry: str, now: int,
         displaced: bool) -> None:
    """Take `w` at `pos`: its journal entry (kinds.UPDATE_APPLIED, `entry` its JSON) in
    place of the pending sleep or wait there if `displaced`, out of the inbox, its row
    taken. One transaction, not synced (see the module's doc)."""
    writes: list[tuple[str, Sequence[Param]]] = [(TAGS[UPDATE_APPLIED] + " BEGIN", ())]
    if displaced:
        writes.append(("DELETE FROM _wk_wf_step WHERE pos = ?", (pos,)))
    writes += [(_PUT_ENTRY, (pos, UPDATE_APPLIED, w.name, entry, now)),
               ("DELETE FROM _wk_wf_event WHERE seq = ?", (w.seq,)),
               (f"UPDATE _wk_wf_update SET state = '{TAKEN}', run_id = ?, pos = ?"
                " WHERE id = ?", (run_id, pos, w.id)),
               ("COMMIT", ())]
    db.exec_many(writes)


Outcome = tuple[str | None, bool, str | None]  # result JSON, tagged, error (None: completed)
Displaced = tuple[int, str, str, int]  # where a displaced sleep or wait goes: pos, kind,
#                                        name, wake_at


def end(db: Backend, id: str, name: str, pos: int, entry: str, outcome: Outcome, now: int,
        pending: Displaced | None) -> None:
    """Update `id`'s handler ended: its journal entry at `pos` (kinds.UPDATE_DONE), its
    row's `outcome` (result text, tagged, error: None if it completed), and the sleep or
    wait it displaced put back, pending at `pending` (pos, kind, name, wake_at). One
    transaction, not synced."""
    result, tagged, error = outcome
    writes: list[tuple[str, Sequence[Param]]] = [
        (TAGS[UPDATE_DONE] + " BEGIN", ()),
        (_PUT_ENTRY, (pos, UPDATE_DONE, name, entry, now)),
        ("UPDATE _wk_wf_update SET state = ?, result = ?, result_tagged = ?, error = ?,"
         " done_at = ? WHERE id = ?",
         (FAILED if error is not None else COMPLETED, result, int(tagged), error, now, id))]
    if pending is not None:
        at, kind, what, wake = pending
        writes.append(("INSERT INTO _wk_wf_step (pos, kind, name, wake_at,"
                       " updated_at) VALUES (?, ?, ?, ?, ?)", (at, kind, what, wake, now)))
    writes.append(("COMMIT", ()))
    db.exec_many(writes)


def give_back(pos: int) -> list[tuple[str, Sequence[Param]]]:
    """The statements that put the updates this run took at `pos` or after back in the
    inbox, in the order they were accepted, each as it was accepted (an operator's
    restart or rescue from `pos`: the run takes them again, as it takes again the events
    its waits took there)."""
    mine = "pos >= ? AND run_id = (SELECT run_id FROM _wk_wf)"
    return [("INSERT INTO _wk_wf_event (name, payload, tagged, received_at)"
             " SELECT ?, json_quote(id), 0, accepted_at FROM _wk_wf_update"
             f" WHERE {mine} ORDER BY pos", (UPDATE_EVENT, pos)),
            (f"UPDATE _wk_wf_update SET state = '{ACCEPTED}', run_id = NULL, pos = NULL,"
             " result = NULL, result_tagged = 0, error = NULL, done_at = NULL"
             f" WHERE {mine}", (pos,))]


def shown(u: Update) -> dict[str, Any]:
    """The fields of `u` that the update's answer shows, but its result (update_route.py)."""
    return {"id": u.id, "name": u.name, "state": u.state, "run_id": u.run_id,
            "position": u.pos, "error": u.error, "accepted_at": u.accepted_at,
            "done_at": u.done_at}
