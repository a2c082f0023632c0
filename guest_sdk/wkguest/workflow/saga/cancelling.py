"""A run cancelled with compensation: the function stopped at its first new position,
then the compensations from there (compensations.py has the rest of the saga), and the
cancel's mark, `_wk_wf_saga`.

`Client.cancel(id, compensate=True)` marks the instance `compensating`. Its next run
replays the function over a frontier that refuses new work, on a read-only database
(core/readonly.py), so any new work stops it where it is (`CancelStop`); that position is
recorded, and the compensations run from there. Later runs hide the positions from there
on from the function, so it stops at the same place while the compensations replay
after it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..backend import Backend, atomically
from ..core.explain import describe
from ..core.instance import FINISHED_SQL, Loaded
from ..core.journal import Journal
from ..core.kinds import PENDING_KINDS, sql_list
from ..core.runner import Runner
from ..errors import (
    CodeError,
    Fail,
    JournalError,
    Reordered,
    StepFailed,
    StoreFault,
    WorkflowSignal,
)
from .compensations import COMPENSATING, CancelStop


def _cancel_stop(pos: int) -> WorkflowSignal:
    return CancelStop(f"cancelled at position {pos}")


def cancelled_run(runner: Runner, marks: Marks, loaded: Loaded, journal: Journal,
                  input_value: Any, now: int, watchdog: int, stop_at: int | None) -> None:
    """A run after a cancel with compensation: the function replays up to where the
    cancel stopped it (the first run: its first unrecorded position, then recorded),
    doing nothing new; then the compensations run from there, and it is cancelled. Its
    own failure, met on the way, wins: it compensates and fails as it would have."""
    bad = loaded.bad_runs + 1
    # Any new work (a step, a sleep, a wait, a helper's value or a marker) stops the
    # function where it is; over a read-only database, any other primitive's first
    # write stops it too.
    front = runner.frontier(loaded, journal, now, watchdog, read_only=True)
    front.refusal = _cancel_stop
    run = runner.new_run(journal, front, loaded.run_id)
    if stop_at is not None:
        run.show_until(stop_at)
    error, state = None, "cancelled"
    try:
        runner.fn(run, input_value)
    except WorkflowSignal as s:  # any other: the function stopped (a new position, its end)
        got = run.stopped or s
        if isinstance(got, Reordered | CodeError | JournalError | StoreFault):
            return runner.settle.stopped(got, loaded, run.frontier, bad)
    except (StepFailed, Fail) as e:
        error, state = str(e) or "failed", "failed"
    except Exception as e:
        return runner.settle.bad_run(bad, f"the workflow function raised {describe(e)}")
    pos = run.position
    if stop_at is None and state == "cancelled":
        marks.stop(pos)
        loaded.pending = None  # the function's, at `pos`: dropped with the stop
    elif stop_at not in (None, pos):
        return runner.settle.park(f"cancelled with compensation at position {stop_at}, the "
                             f"function now stops at position {pos}: the code changed")
    front = runner.frontier(loaded, journal, now, watchdog)
    run.go_on(pos, front)
    runner.failures.failed(runner, run, loaded, front, bad, error, state)


# -- the cancel's mark ------------------------------------------------------------------
# One row while a cancel with compensation is under way: when it was asked, and the
# position its function was stopped at (null until the first run after it). A table of its
# own, made by the first such cancel, so that an older SDK's instance needs no ALTER.
TABLE = "_wk_wf_saga"
_SCHEMA = f"""CREATE TABLE IF NOT EXISTS {TABLE} (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        requested_at INTEGER NOT NULL,
        stop_at INTEGER)"""
_MARK = (f"/*wk:saga-mark*/ INSERT INTO {TABLE} (id, requested_at) VALUES (1, ?)"
         " ON CONFLICT (id) DO UPDATE SET requested_at = excluded.requested_at,"
         " stop_at = NULL")
_STATE = (f"/*wk:saga-state*/ UPDATE _wk_wf SET state = '{COMPENSATING}',"
          " wake_at = max(coalesce(retry_at, ?), ?), waiting_for = NULL, updated_at = ?"
          f" WHERE state NOT IN ({FINISHED_SQL}, 'parked')")
_STOP = f"/*wk:saga-stop*/ UPDATE {TABLE} SET stop_at = ?"
_DROP_PENDING = f"DELETE FROM _wk_wf_step WHERE pos >= ? AND kind IN ({sql_list(PENDING_KINDS)})"
_EXISTS = f"SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '{TABLE}'"


class Marks:
    """The SQL of a cancel with compensation. `known`: the table is known to exist."""

    __slots__ = ("db", "known")

    def __init__(self, db: Backend) -> None:
        self.db = db
        self.known: bool | None = None

    def state(self) -> str | None:
        row = self.db.query_row("SELECT state FROM _wk_wf")
        return None if row is None else str(row[0])

    def ask(self, now: int) -> None:
        """Mark the cancel, and the instance compensating from now, in one durable
        transaction. The caller sets the alarm to now first: a cut before the COMMIT
        leaves an alarm that runs it as it was."""
        self._transaction(lambda: (self.db.exec(_SCHEMA), self.db.exec(_MARK, (now,)),
                                   self.db.exec(_STATE, (now, now, now))), durable=True)
        self.known = True

    def compensating(self, now: int) -> None:
        """The instance begins its compensations (a plain write: the run's next durable
        one syncs it; lost, the next run says it again)."""
        self.db.exec(_STATE, (now, now, now))

    def mark(self) -> tuple[int, int | None] | None:
        """(requested_at, stop_at) of a cancel with compensation under way, or None."""
        if self.known is False:
            return None
        try:
            row = self.db.query_row(f"SELECT requested_at, stop_at FROM {TABLE}")
        except StoreFault:
            if self.known or self._exists():
                raise
            return None
        self.known = True
        return None if row is None else (int(row[0]), None if row[1] is None else int(row[1]))

    def stop(self, pos: int) -> None:
        """The function was stopped at `pos`: recorded, and the pending entry there (the
        function's sleep, wait or step in progress) dropped, so the compensations take
        the positions from `pos` on. A plain write: if it is lost, so is all after it."""
        self._transaction(lambda: (self.db.exec(_DROP_PENDING, (pos,)),
                                   self.db.exec(_STOP, (pos,))), durable=False)

    def _transaction(self, work: Callable[[], object], durable: bool) -> None:
        atomically(self.db, work, commit="/*wk:saga-commit*/ COMMIT" if durable else "COMMIT",
                   durable=durable)

    def _exists(self) -> bool:
        self.known = self.db.query_row(_EXISTS) is not None
        return self.known
