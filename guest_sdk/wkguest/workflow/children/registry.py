"""The SQL of an instance's family: its parent, and the children it started (calls.py,
children/notices.py, and the start and child-done routes).

    _wk_wf_parent  one row in a child: who started it (class, id), whether detached, and
                   its notice to the parent: owed (0, once the child has finished),
                   delivered (1) or given up (2), with the tries so far
    _wk_wf_child   one row per child a parent started, by id: its class, whether
                   detached, where it was started (run id and position), the child run
                   whose notice came (done_run), and its cancel: not asked (0), owed
                   (1), delivered (2)

Both are made with CREATE TABLE IF NOT EXISTS when first needed, not with the schema:
an instance made by an older SDK has neither, and most instances never need them. What
is owed is mostly implied by state rather than written: a finished child with a parent
row not delivered owes its notice; a cancelled parent owes a cancel to each child not
detached and not done (the finish's durable write is what makes them owed).
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

from ..backend import Backend
from ..core.instance import FINISHED_SQL
from ..core.kinds import NOTICE_PREFIX, WAITING, WATCH_PREFIX
from ..errors import StoreFault
from .watchers import WATCHERS

PARENT = "_wk_wf_parent"
CHILDREN = "_wk_wf_child"
OWED, DELIVERED, GIVEN_UP = 0, 1, 2
NOT_ASKED, CANCEL_OWED, CANCELLED = 0, 1, 2

_PARENT_TABLE = f"""CREATE TABLE IF NOT EXISTS {PARENT} (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        cls TEXT NOT NULL,
        pid TEXT NOT NULL,
        detached INTEGER NOT NULL,
        notice INTEGER NOT NULL DEFAULT 0,
        tries INTEGER NOT NULL DEFAULT 0,
        next_try_at INTEGER,
        error TEXT)"""
_CHILD_TABLE = f"""CREATE TABLE IF NOT EXISTS {CHILDREN} (
        id TEXT PRIMARY KEY,
        cls TEXT NOT NULL,
        detached INTEGER NOT NULL,
        started_at TEXT,
        done_run TEXT,
        cancel INTEGER NOT NULL DEFAULT 0,
        tries INTEGER NOT NULL DEFAULT 0,
        next_try_at INTEGER,
        error TEXT)"""

# Where a start attempt is: the run and the last position, which is the attempt's own
# pending entry (counted before the attempt runs). The same on a retry of the attempt,
# another for a later position: so a child id is used by one position of one run.
_HERE = ("(SELECT run_id || '/' || coalesce((SELECT max(pos) FROM _wk_wf_step), -1)"
         " FROM _wk_wf)")
_REGISTER = (f"/*wk:child-register*/ INSERT INTO {CHILDREN} (id, cls, detached, started_at)"
             f" VALUES (?, ?, ?, {_HERE}) ON CONFLICT (id) DO NOTHING")
_REGISTERED = f"SELECT cls, started_at, {_HERE} FROM {CHILDREN} WHERE id = ?"
_TAKE_OVER = (f"/*wk:child-take-over*/ UPDATE {CHILDREN} SET started_at = {_HERE},"
              " detached = ? WHERE id = ?")
_SET_PARENT = (f"/*wk:child-parent*/ INSERT OR REPLACE INTO {PARENT} (id, cls, pid, detached)"
               " VALUES (1, ?, ?, ?)")
_TABLES = ("SELECT name FROM sqlite_master WHERE type = 'table'"
           f" AND name IN ('{PARENT}', '{CHILDREN}', '{WATCHERS}')")
# The notice owed, with what it says: the instance's row as its finish left it.
_NOTICE = ("SELECT p.cls, p.pid, p.tries, p.next_try_at, w.run_id, w.state, w.output,"
           f" w.output_tagged, w.error FROM {PARENT} AS p, _wk_wf AS w WHERE p.notice = {OWED}"
           f" AND w.state IN ({FINISHED_SQL})")
# A terminated parent owes its children not detached a terminate, not a cancel (the
# fourth column says which route: operator/moves.py).
_CANCELS = (f"SELECT c.id, c.cls, c.tries, c.next_try_at, w.state = 'terminated'"
            f" FROM {CHILDREN} AS c, _wk_wf AS w"
            f" WHERE c.cancel != {CANCELLED} AND c.done_run IS NULL"
            f" AND (c.cancel = {CANCEL_OWED}"
            " OR (w.state IN ('cancelled', 'terminated') AND c.detached = 0))")
_DONE = (f"/*wk:child-done*/ INSERT INTO {CHILDREN} (id, cls, detached, done_run)"
         " VALUES (?, ?, 0, ?) ON CONFLICT (id) DO UPDATE SET done_run = excluded.done_run"
         " WHERE cls = excluded.cls AND done_run IS NOT excluded.done_run")

# As core/store.py's put_pending of a wait, but a plain write (calls.py's wait: the run's end
# that follows it, a change of state, is durable and syncs it).
_WAITING = (f"/*wk:wait*/ INSERT INTO _wk_wf_step (pos, kind, name, wake_at, updated_at)"
            f" VALUES (?, '{WAITING}', ?, ?, ?)")
# As core/store.py's add_event, inside the notice's transaction (its COMMIT is the sync).
_EVENT = ("/*wk:child-notice*/ INSERT INTO _wk_wf_event (name, payload, tagged, received_at)"
          " VALUES (?, ?, ?, ?)")


def notice_event(cls: str, id: str) -> str:
    """The name child `cls`/`id`'s notice is stored under in the parent's _wk_wf_event,
    and the name of the child's two positions in the parent's journal."""
    return f"{NOTICE_PREFIX}{cls}/{id}"


def watch_event(cls: str, id: str) -> str:
    """The name awaited workflow `cls`/`id`'s notice is stored under (not a child's:
    children/awaited.py), and the name of the wait for it."""
    return f"{WATCH_PREFIX}{cls}/{id}"


class Registry:
    """The family tables' statements over a Backend."""

    __slots__ = ("db",)

    def __init__(self, db: Backend) -> None:
        self.db = db

    def tables(self) -> set[str]:
        """Which of the family's tables this instance has (and watchers.py's)."""
        return {str(r[0]) for r in _rows(self.db, _TABLES)}

    # -- the parent's side -----------------------------------------------------------

    def register(self, id: str, cls: str, detached: bool) -> tuple[str, bool]:
        """Register child `id` of class `cls` started here (see _HERE). Returns the class
        it is registered with (another: a mismatch) and whether the id is this
        position's (False: another position of this run used it). A child an earlier
        run of this instance started (before a continue-as-new) is taken over by this
        position: it goes on, and its end comes to this run."""
        self.db.exec(_CHILD_TABLE)
        self.db.exec(_REGISTER, (id, cls, int(detached)))
        got = _rows(self.db, _REGISTERED, (id,))
        if not got:
            raise StoreFault(f"child {id!r} is not registered after its insert")
        known, at, here = got[0]
        if at is not None and at != here and str(at).split("/")[0] != str(here).split("/")[0]:
            self.db.exec(_TAKE_OVER, (int(detached), id))
            return str(known), True
        return str(known), at is None or at == here

    def owe_cancel(self, id: str, cls: str) -> bool:
        """Child `id` is no longer wanted: its cancel owed, durably. False if there is no
        such child, or it is done, or its cancel was asked already."""
        self.db.exec(_CHILD_TABLE)
        return self.db.exec_durable(
            f"/*wk:child-cancel*/ UPDATE {CHILDREN} SET cancel = {CANCEL_OWED}"
            f" WHERE id = ? AND cls = ? AND cancel = {NOT_ASKED} AND done_run IS NULL",
            (id, cls)) > 0

    def cancels_owed(self) -> list[tuple[str, str, int, int | None, bool]]:
        """The children owed a cancel: (id, class, tries, next try at, and whether it is
        a terminate: the parent was terminated)."""
        return [(str(r[0]), str(r[1]), int(r[2]), r[3], bool(r[4]))
                for r in _rows(self.db, _CANCELS)]

    def cancel_delivered(self, id: str) -> None:
        # A plain write: if it is lost, the cancel is sent again, which changes nothing.
        self.db.exec(f"UPDATE {CHILDREN} SET cancel = {CANCELLED}, error = NULL WHERE id = ?",
                     (id,))

    def cancel_failed(self, id: str, tries: int, next_try_at: int | None, error: str) -> None:
        """`next_try_at` None: given up (the cancel counts as done, its error kept)."""
        state = CANCEL_OWED if next_try_at is not None else CANCELLED
        self.db.exec(f"UPDATE {CHILDREN} SET cancel = ?, tries = ?, next_try_at = ?,"
                     " error = ? WHERE id = ?", (state, tries, next_try_at, error, id))

    def take_notice(self, id: str, cls: str, run_id: str, text: str, tagged: bool,
                    now: int) -> bool:
        """Child `cls`/`id`'s notice of its run `run_id`: noted, and the event `text`
        (its payload) inserted, in one durable transaction, so a duplicate is known as
        one whatever the cut. False for a duplicate (or a class that is not the
        registered one). A child whose cancel was asked is noted but gets no event:
        nothing waits for it. An instance this one did not start is one it awaits
        (children/awaited.py): its event is `watch_event`'s."""
        db = self.db
        db.exec(_CHILD_TABLE)
        db.exec("/*wk:child-notice-begin*/ BEGIN IMMEDIATE")
        try:
            if db.exec(_DONE, (id, cls, run_id)) == 0:
                db.exec("ROLLBACK")
                return False
            got = _rows(db, f"SELECT cancel, started_at FROM {CHILDREN} WHERE id = ?", (id,))
            if got and got[0][1] is None:  # not started here: an awaited workflow's
                db.exec(_EVENT, (watch_event(cls, id), text, int(tagged), now))
            elif not got or got[0][0] == NOT_ASKED:
                db.exec(_EVENT, (notice_event(cls, id), text, int(tagged), now))
            db.exec_durable("/*wk:child-notice-commit*/ COMMIT")
        except BaseException:
            with contextlib.suppress(StoreFault):  # else the host rolls it back
                db.exec("ROLLBACK")
            raise
        return True

    def put_waiting(self, pos: int, name: str, deadline: int, now: int) -> None:
        """The pending entry of a child's wait at `pos` (see _WAITING)."""
        self.db.exec(_WAITING, (pos, name, deadline, now))

    # -- the child's side ------------------------------------------------------------

    def set_parent(self, cls: str, pid: str, detached: bool) -> None:
        """Record the parent of the instance the start is about to create (a plain
        write before the create's durable one, which syncs it)."""
        self.db.exec(_PARENT_TABLE)
        self.db.exec(_SET_PARENT, (cls, pid, int(detached)))

    def parent(self) -> tuple[str, str] | None:
        """The recorded parent (class, id), or None (no parent: a client started it)."""
        if PARENT not in self.tables():
            return None
        got = _rows(self.db, f"SELECT cls, pid FROM {PARENT}")
        return (str(got[0][0]), str(got[0][1])) if got else None

    def notice_owed(self) -> list[Any] | None:
        """(parent class, parent id, tries, next try at, run id, state, output, tagged,
        error) of the notice owed, or None."""
        got = _rows(self.db, _NOTICE)
        return got[0] if got else None

    def notice_done(self, state: int, tries: int, next_try_at: int | None,
                    error: str | None) -> None:
        # A plain write: if it is lost, the notice is sent again, and a duplicate is
        # ignored by the parent.
        self.db.exec(f"UPDATE {PARENT} SET notice = ?, tries = ?, next_try_at = ?, error = ?",
                     (state, tries, next_try_at, error))


def _rows(db: Backend, sql: str, params: tuple[Any, ...] = ()) -> list[list[Any]]:
    try:
        return list(json.loads(db.query_packed(sql, params))[1:])
    except ValueError:
        raise StoreFault("query-packed returned malformed JSON") from None
