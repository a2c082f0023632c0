"""The SQL of an operator's moves (moves.py): the pause's row, and a journal taken back to a
position (a rescue, a restart).

    _wk_wf_pause  one row while the instance is paused: the state it was paused in (to
                  go back to on resume) and when. Made by the first pause, so that an
                  instance made by an older SDK needs no ALTER.

Each move is one transaction made durable by its COMMIT, after the alarm it needs is set
(a cut before the COMMIT leaves the instance as it was, and an alarm that finds it so).

Taking the journal back to position P (`truncate`): the events that waits took at P or
after (a wait's entry, a group's wait branch, a child's notice) are given back to
_wk_wf_event under their first sequence numbers, so the waits that run again take them
again, in the order they came (as Temporal's reset reapplies signals), and so are the
updates taken there (updates/inbox.py), so the run takes them again; a restart or a
rescue keeps the attempts of the positions it removes as earlier attempts
(core/earlier_attempts.py);
then the entries from P on, and the group branch rows from P on, are deleted (the
entries' trigger forgets their attempts and tracebacks). The emitted stream
(_wk_wf_emit) and the instance's own tables are never touched: what was emitted stays
emitted, and a tx step that runs again writes again.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..backend import Backend, Param, atomically
from ..core import earlier_attempts
from ..core.kinds import STEP_FAILED, WAIT_TOOK_EVENT, WAIT_TOOK_EVENT_TAGGED
from ..errors import StoreFault
from ..saga.compensations import PREFIX as COMPENSATION_PREFIX
from ..updates import inbox as updates

PAUSE = "_wk_wf_pause"
BRANCH = "_wk_wf_branch"  # groups/rows.py's
SAGA = "_wk_wf_saga"  # saga/cancelling.py's
CHILDREN = "_wk_wf_child"  # children/registry.py's
PARENT = "_wk_wf_parent"
UPDATES = "_wk_wf_update"  # updates/inbox.py's
# The attempts' history (core/attempt_history.py), their tracebacks, and the attempts
# restarts kept (core/earlier_attempts.py).
HISTORY = ("_wk_wf_attempt", "_wk_wf_attempt_traceback", earlier_attempts.TABLE)

_PAUSE_TABLE = f"""CREATE TABLE IF NOT EXISTS {PAUSE} (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        paused_from TEXT NOT NULL,
        paused_at INTEGER NOT NULL)"""
_TOOK = f"kind IN ('{WAIT_TOOK_EVENT}', '{WAIT_TOOK_EVENT_TAGGED}')"
_TAGGED = f"kind = '{WAIT_TOOK_EVENT_TAGGED}'"


def _give_back(table: str) -> str:
    return ("/*wk:give-back*/ INSERT OR IGNORE INTO _wk_wf_event (seq, name, payload, tagged,"
            f" received_at) SELECT event_seq, name, result, {_TAGGED}, updated_at FROM {table}"
            f" WHERE pos >= ? AND {_TOOK} AND result IS NOT NULL ORDER BY event_seq")


Statement = tuple[str, Sequence[Param]]


class Rewind:
    """The statements of the operator's moves on the instance's tables (see the
    module's doc), run on its database."""

    __slots__ = ("db",)

    def __init__(self, db: Backend) -> None:
        self.db = db

    def tables(self) -> set[str]:
        names = (PAUSE, BRANCH, SAGA, CHILDREN, PARENT, UPDATES, *HISTORY)
        got = self.db.query_packed("SELECT name FROM sqlite_master WHERE type = 'table'"
                                   f" AND name IN ({', '.join(repr(n) for n in names)})")
        return {str(r[0]) for r in _rows(got)}

    # -- reading ---------------------------------------------------------------------

    def paused(self) -> tuple[str, int] | None:
        """(the state it was paused in, when) of a paused instance, or None."""
        if PAUSE not in self.tables():
            return None
        row = self.db.query_row(f"SELECT paused_from, paused_at FROM {PAUSE}")
        return None if row is None else (str(row[0]), int(row[1]))

    def compensations(self) -> int:
        """How many compensations are recorded (saga/compensations.py names their steps)."""
        row = self.db.query_row("SELECT count(*) FROM _wk_wf_step WHERE substr(name, 1, ?) = ?",
                                (len(COMPENSATION_PREFIX), COMPENSATION_PREFIX))
        return 0 if row is None else int(row[0])

    def last_failed(self) -> int | None:
        """The last position, if its entry is a step's final failure (X)."""
        row = self.db.query_row("SELECT pos, kind FROM _wk_wf_step ORDER BY pos DESC LIMIT 1")
        return int(row[0]) if row is not None and row[1] == STEP_FAILED else None

    def positions(self) -> list[tuple[int, str]]:
        """(pos, name) of every recorded position, in order."""
        got = self.db.query_packed("SELECT pos, name FROM _wk_wf_step ORDER BY pos")
        return [(int(r[0]), str(r[1])) for r in _rows(got)]

    # -- the statements of a move ------------------------------------------------------

    @staticmethod
    def pause(state: str, now: int) -> list[Statement]:
        return [(_PAUSE_TABLE, ()),
                (f"/*wk:pause*/ INSERT OR REPLACE INTO {PAUSE} (id, paused_from, paused_at)"
                 " VALUES (1, ?, ?)", (state, now)),
                ("UPDATE _wk_wf SET state = 'paused', wake_at = NULL, updated_at = ?", (now,))]

    @staticmethod
    def resume(state: str, now: int) -> list[Statement]:
        return [(f"DELETE FROM {PAUSE}", ()),
                ("/*wk:resume*/ UPDATE _wk_wf SET state = ?, wake_at = ?, updated_at = ?"
                 " WHERE state = 'paused'", (state, now, now))]

    @staticmethod
    def again(state: str, now: int) -> list[Statement]:
        """The instance's row made unfinished and due now, as `state` (a rescue)."""
        return [("/*wk:again*/ UPDATE _wk_wf SET state = ?, output = NULL, output_tagged = 0,"
                 " error = NULL, wake_at = ?, waiting_for = NULL, bad_runs = 0,"
                 " retry_at = NULL, finished_at = NULL, updated_at = ?", (state, now, now))]

    def truncate(self, pos: int, tables: set[str], kept: tuple[str, int] | None = None
                 ) -> list[Statement]:
        """The journal back to `pos` (the module's doc), and what a move from there drops:
        a cancel with compensation under way, a pause. `kept`: the move (restart, rescue)
        and its time, which keeps the removed positions' attempts as earlier ones."""
        out: list[Statement] = [(_give_back("_wk_wf_step"), (pos,))]
        if UPDATES in tables:
            out += updates.give_back(pos)
        if kept is not None:
            out += earlier_attempts.keep(pos, *kept, tables)
        if BRANCH in tables:
            out += [(_give_back(BRANCH), (pos,)), (f"DELETE FROM {BRANCH} WHERE pos >= ?", (pos,))]
        out.append(("/*wk:truncate*/ DELETE FROM _wk_wf_step WHERE pos >= ?", (pos,)))
        out += [(f"DELETE FROM {t}", ()) for t in (SAGA, PAUSE) if t in tables]
        return out

    @staticmethod
    def new_run(tables: set[str]) -> list[Statement]:
        """What a restart from the start also resets: its children's registry (the new
        run may start the same ids; the child instances are left as they are) and the
        notice owed to its parent (the new run's end is told again, under its new id)."""
        out: list[Statement] = [("UPDATE _wk_wf SET output = NULL, output_tagged = 0,"
                                 " finished_at = NULL", ())]
        if CHILDREN in tables:
            out.append((f"DELETE FROM {CHILDREN}", ()))
        if PARENT in tables:
            out.append((f"UPDATE {PARENT} SET notice = 0, tries = 0, next_try_at = NULL,"
                        " error = NULL", ()))
        if earlier_attempts.TABLE in tables:  # a new run keeps no earlier attempts
            out.append(earlier_attempts.forget())
        return out

    def commit(self, statements: list[Statement]) -> None:
        """`statements` in one transaction, made durable by its COMMIT."""
        db = self.db

        def run_all() -> None:
            for sql, params in statements:
                db.exec(sql, params)

        atomically(db, run_all, "/*wk:op-begin*/ BEGIN IMMEDIATE", "/*wk:op-commit*/ COMMIT")


def _rows(packed: str) -> list[list[Any]]:
    try:
        return list(json.loads(packed)[1:])
    except ValueError:
        raise StoreFault("query-packed returned malformed JSON") from None
