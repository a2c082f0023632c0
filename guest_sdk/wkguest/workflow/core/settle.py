"""How a run ends: suspended until its wake time, continued as new, a bad run, parked, or
finished (runner.py has the run itself).

Parking: a failure that is not the workflow's own parks the instance instead of failing
it (`park`): a reordered deploy (Reordered), a mistake in the code (CodeError), a
recorded entry that does not decode (JournalError, in a run that read its whole journal
from the database; one met in the warm cache drops the cache and tries again, as a bad
run), and too many bad runs in a row. Parked is not finished: its state says why, its
journal stays as recorded, nothing runs, it holds no alarm and retention never deletes
it. It waits for an operator.

A finish tells the features' `Endings` (a child's notice to its parent, a parent's
cancels to its children: children/notices.py), which answer when the retained instance's
alarm must deliver what it owes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from ..backend import Backend
from ..errors import (
    CodeError,
    ContinueAsNew,
    JournalError,
    Reordered,
    Suspend,
    UnsupportedValue,
    ValueTooLarge,
    WorkflowSignal,
)
from . import counted, spans, told
from .config import Config
from .cursor import Cursor
from .frontier import Frontier
from .instance import Loaded
from .journal import Cache
from .store import Store
from .values import encode


class Endings(Protocol):
    """What a finished instance owes others (children/notices.py's `Notices`)."""

    def finished(self, state: str, output: str | None, tagged: bool, error: str | None,
                 now: int) -> int | None:
        """It has just finished as `state`: when its alarm must deliver what it owes,
        or None."""

    def drain(self, now: int) -> int | None:
        """Deliver what it owes: when to try again, or None once nothing is owed."""


class Settler:
    """A run's end, over the instance's store (see the module's doc)."""

    def __init__(self, store: Store, db: Backend, config: Config, cache: Cache,
                 endings: Endings, new_run_id: Callable[[], str]) -> None:
        self.store = store
        self.db = db
        self.config = config
        self.cache = cache
        self.endings = endings
        self.new_run_id = new_run_id
        # What this event's run finished the instance as: (state, output, tagged, error,
        # at), once the finish was written; None otherwise.
        self.finished_as: tuple[str, str | None, bool, str | None, int] | None = None

    def settle(self, run: Cursor, loaded: Loaded, front: Frontier, bad: int, *,
               output: Any = None, returned: bool = False, error: str | None = None,
               bad_reason: str | None = None) -> None:
        """The function returned `output` (`returned`), or raised: `bad_reason` for an
        exception that is not the workflow's own failure."""
        if run.stopped is not None:  # the function swallowed a signal: the signal wins
            return self.stopped(run.stopped, loaded, front, bad)
        if bad_reason is not None:
            return self.bad_run(bad, bad_reason, sync=front.unsynced)
        if not returned:
            return self.finish("failed", None, False, error)
        try:
            text, tagged = encode(output, self.config.max_value_bytes, "the workflow's output")
        except (UnsupportedValue, ValueTooLarge) as e:
            return self.finish("failed", None, False, str(e))
        self.finish("completed", text, tagged, None)

    def stopped(self, s: WorkflowSignal, loaded: Loaded, front: Frontier, bad: int) -> None:
        """The run stopped with signal `s`."""
        if isinstance(s, Suspend):
            return self._suspend(s, loaded, front)
        if isinstance(s, ContinueAsNew):
            return self._continue(s.input)
        if isinstance(s, Reordered | CodeError):
            return self.park(str(s))
        if isinstance(s, JournalError):
            return self.unreadable(s, bad)
        raise s  # StoreFault, or a signal this runner does not know: on_alarm handles it

    def _suspend(self, s: Suspend, loaded: Loaded, front: Frontier) -> None:
        now = self.db.now()
        wake = now if s.wake_at is None else s.wake_at
        changed = (s.state, s.wake_at, s.waiting_for) != (
            loaded.state, loaded.wake_at, loaded.waiting_for) or loaded.error is not None
        # Only a change of the reported state needs an fsync; an unchanged one (an event
        # that did not wake it, say) only clears the bad-run count.
        spans.goes_on(self.store)
        self.store.end_run(s.state, s.wake_at, s.waiting_for, now,
                           durable=changed or front.unsynced)
        front.arm(wake)

    def _continue(self, input_value: Any) -> None:
        """Continue as new: the alarm to now first (a cut before the switch's COMMIT
        leaves the old run, which the alarm runs again to the same continue), then the
        switch, durably. The new run begins in the next alarm, so this event's cost stays
        the old run's."""
        try:
            text, tagged = encode(input_value, self.config.max_value_bytes,
                                  "continue_as_new's input")
        except (UnsupportedValue, ValueTooLarge) as e:
            return self.finish("failed", None, False, str(e))
        now = self.db.now()
        self.db.alarm_set(now)
        self.cache.forget()
        run_id = self.new_run_id()
        if self.store.publish.wanted is not None:  # labels this run set: kept across
            self.store.publish.state("running", now)  # runs, with the switch's state
        self.store.continue_as_new(run_id, text, tagged, now)
        counted.started(self.db)
        spans.run_began(self.db, self.store, run_id)

    def unreadable(self, e: JournalError, bad: int) -> None:
        """A recorded entry this runner cannot read. Read fresh from the database, the
        history itself is at fault, and retrying the same code cannot change it: park.
        Met in the warm cache, the cache may be: drop it, and the next run (after a bad
        run's backoff) reads everything again."""
        warm, self.cache.warm = self.cache.warm, False
        self.cache.forget()
        if not warm:
            return self.park(str(e))
        self.bad_run(bad, str(e))

    def bad_run(self, bad: int, reason: str, sync: bool = False) -> None:
        """The run ended without the function returning (`bad`: the count with it)."""
        if bad >= self.config.max_bad_runs:
            return self.park(self.too_many_bad_runs(reason))
        # The watchdog alarm set at the start brings the next run after its backoff.
        # `sync`: steps of this run recorded outcomes that the next status would report.
        spans.goes_on(self.store)
        self.store.note_bad_run(reason, self.db.now(), durable=sync)
        told.bad_run(self.db, self.store.rows, reason, bad, self.config.max_bad_runs)

    def too_many_bad_runs(self, last: str | None) -> str:
        return (
            f"{self.config.max_bad_runs} runs in a row ended without the workflow function "
            "returning (an exception or trap outside any step, or a replay over the event's "
            f"budget); the last reason known: {last or 'none recorded (a trap or a cut)'}"
        )

    def park(self, reason: str) -> None:
        """Park the instance (see the module's doc): durably, then its alarm cleared, in
        that order, so that a cut in between leaves an alarm that finds it parked."""
        self.store.park(reason, self.db.now())
        self.db.alarm_clear()
        told.parked(self.db, self.store.rows, reason)
        counted.parked(self.db)

    def finish(self, state: str, output: str | None, tagged: bool, error: str | None) -> None:
        """Finish the instance as `state`, durably, and set the alarm for its retention
        (or for what it owes others, sooner)."""
        now = self.db.now()
        due = now + self.config.retention_ms
        if self.store.finish(state, output, tagged, error, now):
            told.finished(self.db, self.store.rows, state, error)
            counted.finished(self.db, state)
            self.finished_as = (state, output, tagged, error, now)
            owed = self.endings.finished(state, output, tagged, error, now)
            if owed is not None:
                due = min(due, owed)
        self.db.alarm_set(due)
