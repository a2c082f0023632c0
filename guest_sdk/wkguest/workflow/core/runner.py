"""The runner: one workflow function served as an actor class, one event at a time.

Runs happen in `on_alarm`, and in one request: an operator's start that waits runs the
new instance's first run in its own event (`create_and_run`). Each run, in order:

1. reads the instance and the journal delta (one query);
2. a finished instance: deletes itself once its retention is over, else re-arms for it;
   a parked one: runs nothing and holds no alarm;
3. counts the run as "bad" and sets the alarm to that count's backoff (the watchdog),
   before running anything: a run that ends without the function returning (a trap
   outside any step, a replay over the CPU budget) leaves both behind, so the next run
   backs off, and after 2 × attempts such runs in a row the instance parks, saying why.
   A run that reaches a step's attempt, or ends cleanly, clears the count;
4. calls the workflow function, which replays the journal and does new work;
5. records where it stopped (exec_durable when the state changed or a step's outcome was
   recorded in this run: the step results ride on this one fsync) and sets the alarm to
   its wake time, or finishes: output or error, durably, and the retention alarm
   (settle.py).

While the instance is unfinished and not parked its alarm is therefore always set. A
StoreFault (the runner's own database or alarm failed) is never a failed workflow: the
event gives back its bad-run count and asks for another try in a second; if even that
fails, it traps and the alarm as last committed stands.

Only the workflow's own failures (a step out of attempts, `wf.fail`, an output that
cannot be recorded) fail it. What a failure does first is the features' `Failures`
(the saga's compensations, saga/hooks.py); what a finished instance owes, their
`Endings` (settle.py). The top-level runner.py plugs both in.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from typing import Any, Protocol

from ..backend import Backend
from ..errors import Fail, JournalError, StepFailed, StoreFault, WorkflowSignal
from . import counted, cuts, mocks, spans
from .config import Config
from .cursor import Cursor
from .explain import describe
from .frontier import Frontier
from .instance import FINISHED, HELD, RESTING, Loaded
from .journal import Cache, Journal
from .mocks import Mocks
from .readonly import ReadOnly
from .settle import Endings, Settler
from .store import Store

STORE_RETRY_MS = 1000

# The workflow function, given the run's handle (a Cursor: wkguest.workflow.Run). Typed
# loosely here: a function of `Run` is not a function of any Cursor.
Function = Callable[[Any, Any], Any]
NewRun = Callable[[Journal, Frontier, str], Cursor]  # the handle of one run


class Failures(Protocol):
    """What the workflow's own failure does, and runs that a feature takes over (the
    saga, saga/hooks.py)."""

    def resumes(self, runner: Runner, loaded: Loaded, journal: Journal, input_value: Any,
                now: int, watchdog: int) -> bool:
        """Whether it took this run over (and ran it)."""

    def failed(self, runner: Runner, run: Cursor, loaded: Loaded, front: Frontier, bad: int,
               error: str | None, state: str) -> None:
        """The function failed with `error` (or was cancelled, as `state`): end the run."""

    def cancel(self, runner: Runner) -> bool:
        """A cancel that asks for compensation: whether it took it."""


class Runner:
    def __init__(self, fn: Function, config: Config, backend: Backend, new_run: NewRun,
                 failures: Failures, endings: Endings) -> None:
        self.fn = fn
        self.config = config
        self.db = backend
        self.store = Store(backend)
        self.retry = config.retry
        self.new_run = new_run
        self.failures = failures
        self.cache = Cache()  # this instance's journal, kept while it is warm
        self.settle = Settler(self.store, backend, config, self.cache, endings,
                              self.new_run_id)
        self.store_fault: str | None = None  # why the last run could not use its database
        self._began = False
        # on_init has just made the tables, in this object's instance: the event that
        # follows (in the same instance, or none: a trap drops the instance and its
        # objects) finds them empty, without asking.
        self.just_created = False
        # A test's mocks (mocks.py; None in production), known once read, or once on-init
        # made the tables (then there are none), or once the test route set them.
        self.mocks: Mocks | None = None
        self.mocks_known = False

    @property
    def journal(self) -> Journal | None:
        """The warm cache: this instance's journal, if it is kept."""
        return self.cache.journal

    def init(self) -> None:
        """`on_init`: create the tables (once per actor)."""
        self.store.init_schema()
        self.just_created = self.mocks_known = True

    def new_run_id(self) -> str:
        # os.urandom is WASI's random_get in a guest; `secrets` would pull in hashlib.
        return os.urandom(8).hex()

    def forget(self) -> None:
        """Drop the warm cache (the actor is being deleted, or storage failed)."""
        self.cache.forget()
        self.store.publish.forget()

    def create_and_run(self, run_id: str, text: str, tagged: bool, now: int) -> bool:
        """A waiting start's event (protocol.py): create the instance with its first run
        already begun, and run it. False if the instance was there (nothing is done).

        The row goes in as `begin_run` leaves it (the run counted bad until it reaches a
        step, the watchdog as its retry and wake time), after the watchdog alarm: one
        write and one alarm instead of the start's (the alarm to now, the insert) and the
        run's (begin_run, the watchdog). A cut after the insert leaves what a run from
        on_alarm leaves when it is cut; before it, an alarm that finds no instance. What
        the run would load is known too: the row just inserted, nothing else."""
        if not self.mocks_known:  # an actor made before the start: a test's mocks?
            self.mocks, self.mocks_known = mocks.read(self.db), True
        watchdog = now + self.retry.backoff(1)
        self.db.alarm_set(watchdog)  # first: whatever syncs the insert syncs it too
        if not self.store.create(run_id, text, tagged, now, watchdog=watchdog):
            return False
        counted.started(self.db)
        spans.run_began(self.db, self.store, run_id, running_now=True)
        loaded = Store.just_created(run_id, text, tagged)
        loaded.tested = self.mocks is not None
        self.on_alarm(begun=(loaded, now, watchdog))
        return True

    # -- on_alarm ------------------------------------------------------------------

    def on_alarm(self, begun: tuple[Loaded, int, int] | None = None) -> None:
        """Run the instance. `begun`: a first run that `create_and_run` has begun, with
        what it knows (the instance as loading it would read it, the clock, the
        watchdog), instead of reading them."""
        self._began = self.just_created = False
        self.settle.finished_as = None
        try:
            self._on_alarm(begun)
        except StoreFault as fault:
            self.forget()
            # The status says why the instance does not move, even if the database is too
            # full to record it: kept here too, for the status asked of this instance.
            self.store_fault = f"storage: {fault}"
            try:
                if self._began:
                    self.store.undo_bad_run()  # storage trouble is not the workflow's
                self.db.alarm_set(self.db.now() + STORE_RETRY_MS)
            except StoreFault:
                raise fault from None
            with contextlib.suppress(StoreFault):
                self.store.note_bad_run(self.store_fault, self.db.now())
        else:
            self.store_fault = None

    def _on_alarm(self, begun: tuple[Loaded, int, int] | None) -> None:
        if begun is not None:
            return self._run(*begun)
        j = self.cache.journal
        loaded = self.store.load(len(j) if j else 0, j.run_id if j else "")
        if loaded is None:  # an alarm left on an actor that was never started
            self.forget()
            self.db.delete_self()
            return
        now = self.db.now()
        if loaded.state not in RESTING:
            self._note_trap(loaded)
        if loaded.state in HELD:  # parked, or paused (operator/moves.py)
            self.db.alarm_clear()  # a stray alarm (say, the host's retry): it holds none
        elif loaded.state in FINISHED:
            self._retain(loaded, now)
        elif loaded.retry_at is not None and now < loaded.retry_at:
            self.db.alarm_set(loaded.retry_at)  # a bad run's backoff is pending
        elif loaded.bad_runs >= self.config.max_bad_runs:
            self.settle.park(self.settle.too_many_bad_runs(loaded.error))
        else:
            self._run(loaded, now)

    def note_trap(self) -> str | None:
        """Why the instance's last event was cut (a trap, a budget), as the host tells
        it: noted on the attempt it cut, if a step's or a group's branch's was pending,
        and as the instance's error, which its status shows and a final failure quotes
        (cuts.py). Returns that error, or None if no cut is pending. (Asked by runs, and
        by the status: the first event after a cut records it.)"""
        trap = self.db.last_trap_info()
        return None if trap is None else cuts.note(self.store, trap)

    def _note_trap(self, loaded: Loaded) -> None:
        error = self.note_trap()
        if error is not None:
            loaded.error = error

    def _retain(self, loaded: Loaded, now: int) -> None:
        due = (loaded.finished_at or now) + self.config.retention_ms
        owed = self.settle.endings.drain(now)  # a notice to the parent, cancels to children
        if owed is not None:
            self.db.alarm_set(min(owed, max(due, now)))
        elif now >= due:
            self.forget()
            self.db.delete_self()
        else:
            self.db.alarm_set(due)

    def _run(self, loaded: Loaded, now: int, watchdog: int | None = None) -> None:
        """`watchdog`: the run was begun with the instance's insert (create_and_run)."""
        bad = loaded.bad_runs + 1
        if watchdog is None:
            watchdog = now + self.retry.backoff(bad)
            self.store.begin_run(bad, watchdog, now)
            self._began = True
            self.db.alarm_set(watchdog)
        else:  # begun by the insert, after its watchdog alarm
            self._began = True
        try:
            journal, input_value = self.journal_for(loaded)  # before Run takes its lists
        except JournalError as e:
            return self.settle.unreadable(e, bad)
        if self.failures.resumes(self, loaded, journal, input_value, now, watchdog):
            return
        front = self.frontier(loaded, journal, now, watchdog)
        run = self.new_run(journal, front, loaded.run_id)
        try:
            output = self.fn(run, input_value)
        except WorkflowSignal as s:
            return self.settle.stopped(run.stopped or s, loaded, front, bad)
        except (StepFailed, Fail) as e:
            return self.failures.failed(self, run, loaded, front, bad, str(e) or "failed",
                                        "failed")
        except Exception as e:
            reason = f"the workflow function raised {describe(e)}"
            return self.settle.settle(run, loaded, front, bad, bad_reason=reason)
        self.settle.settle(run, loaded, front, bad, output=output, returned=True)

    def frontier(self, loaded: Loaded, journal: Journal, now: int, watchdog: int | None,
                 read_only: bool = False) -> Frontier:
        """The frontier of a run of `loaded` begun at `now` with alarm `watchdog`;
        `read_only`: over a database that the first write stops (readonly.py)."""
        db = ReadOnly(self.db) if read_only else self.db
        store = Store(db) if read_only else self.store
        front = Frontier(store, db, journal, loaded.pending, self.config.max_value_bytes,
                         self.config.run_budget_ms, now)
        front.alarm_at = watchdog
        if not read_only:
            front.mocks = self._mocks(loaded.tested)
            front.updates_waiting = loaded.updates_waiting
        return front

    def _mocks(self, there: bool) -> Mocks | None:
        """A test's mocks, where a load saw their table `there`: read once per runner."""
        if not there:
            self.mocks, self.mocks_known = None, True
        elif not self.mocks_known:
            self.mocks, self.mocks_known = mocks.read(self.db, probe=False), True
        return self.mocks

    def journal_for(self, loaded: Loaded) -> tuple[Journal, Any]:
        """The journal of `loaded`'s run readied for one run (the warm cache, or a new
        one), and the run's input: what a run, or a dry replay (events/dry_replay.py),
        replays. Raises JournalError."""
        journal = self.cache.for_run(loaded)
        return journal, journal.begin_run(loaded)

    # -- a client's or an operator's end -----------------------------------------------

    def cancel(self, compensate: bool = False) -> None:
        """An operator's or a client's cancel (the protocol's cancel route) of an
        unfinished instance: it finishes as cancelled at once, and its retention begins.
        `compensate`: the features may take it instead (the saga: its next run runs the
        compensations, then finishes it as cancelled; saga/hooks.py)."""
        if compensate and self.failures.cancel(self):
            return
        # The alarm first: a parked instance holds none, and a cut after the finish's
        # COMMIT must still leave one for its retention.
        self.db.alarm_set(self.db.now() + self.config.retention_ms)
        self.settle.finish("cancelled", None, False, None)

    def terminate(self, reason: str) -> None:
        """An operator's terminate of an unfinished instance (operator/moves.py): it
        finishes as terminated at once, with `reason` as its error, compensating nothing,
        and its retention begins. Its children not detached are terminated in turn
        (children/notices.py), as a cancelled parent's are cancelled. The alarm first, as
        for a cancel."""
        self.forget()
        self.db.alarm_set(self.db.now() + self.config.retention_ms)
        self.settle.finish("terminated", None, False, reason)
