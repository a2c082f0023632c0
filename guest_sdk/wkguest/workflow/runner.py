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
   its wake time, or finishes: output or error, durably, and the retention alarm.

While the instance is unfinished and not parked its alarm is therefore always set. A
StoreFault (the runner's own database or alarm failed) is never a failed workflow: the
event gives back its bad-run count and asks for another try in a second; if even that
fails, it traps and the alarm as last committed stands.

Parking: a failure that is not the workflow's own parks the instance instead of failing
it (`_park`): a reordered deploy (Reordered), a mistake in the code (CodeError), a
recorded entry that does not decode (JournalError, in a run that read its whole journal
from the database; one met in the warm cache drops the cache and tries again, as a bad
run), and too many bad runs in a row. Parked is not finished: its state says why, its
journal stays as recorded, nothing runs, it holds no alarm and retention never deletes
it. It waits for an operator. Only the workflow's own failures (a step out of attempts,
`wf.fail`, an output that cannot be recorded) fail it; the first two, and a cancel that
asks for it, run the compensations of its completed steps first
(saga/compensations.py), compensating.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from typing import Any

from .children.notices import Family
from .core.backend import Backend
from .core.config import Config
from .core.frontier import Frontier, describe
from .core.journal import Journal
from .core.kinds import STEP_RETRYING
from .core.readonly import ReadOnly
from .core.store import FINISHED, HELD, PARKED, RESTING, Loaded, Store
from .core.values import encode
from .errors import (
    CodeError,
    ContinueAsNew,
    Fail,
    JournalError,
    Reordered,
    StepFailed,
    StoreFault,
    Suspend,
    UnsupportedValue,
    ValueTooLarge,
    WorkflowSignal,
)
from .run import Run
from .saga.cancelling import CancellingFrontier, Marks, cancelled_run
from .saga.compensations import COMPENSATING, compensating, outcome

Workflow = Callable[[Run, Any], Any]
STORE_RETRY_MS = 1000


class Runner:
    def __init__(self, fn: Workflow, config: Config, backend: Backend) -> None:
        self.fn = fn
        self.config = config
        self.db = backend
        self.store = Store(backend)
        self.retry = config.retry
        self.family = Family(self.store, backend)  # parent and children (children/notices.py)
        self.marks = Marks(backend)  # a cancel with compensation under way (saga/compensations.py)
        self.journal: Journal | None = None  # the warm cache: this instance's journal
        self.store_fault: str | None = None  # why the last run could not use its database
        self._began = False
        self._warm = False  # this run's journal came from the warm cache, not a fresh load
        # What this event's run finished the instance as: (state, output, tagged, error,
        # at), once the finish was written; None otherwise.
        self.finished_as: tuple[str, str | None, bool, str | None, int] | None = None
        # on_init has just made the tables, in this object's instance: the event that
        # follows (in the same instance, or none: a trap drops the instance and its
        # objects) finds them empty, without asking.
        self.just_created = False

    def init(self) -> None:
        """`on_init`: create the tables (once per actor)."""
        self.store.init_schema()
        self.just_created = True

    def new_run_id(self) -> str:
        # os.urandom is WASI's random_get in a guest; `secrets` would pull in hashlib.
        return os.urandom(8).hex()

    def forget(self) -> None:
        """Drop the warm cache (the actor is being deleted, or storage failed)."""
        self.journal = None

    def create_and_run(self, run_id: str, text: str, tagged: bool, now: int) -> bool:
        """A waiting start's event (protocol.py): create the instance with its first run
        already begun, and run it. False if the instance was there (nothing is done).

        The row goes in as `begin_run` leaves it (the run counted bad until it reaches a
        step, the watchdog as its retry and wake time), after the watchdog alarm: one
        write and one alarm instead of the start's (the alarm to now, the insert) and the
        run's (begin_run, the watchdog). A cut after the insert leaves what a run from
        on_alarm leaves when it is cut; before it, an alarm that finds no instance. What
        the run would load is known too: the row just inserted, nothing else."""
        watchdog = now + self.retry.backoff(1)
        self.db.alarm_set(watchdog)  # first: whatever syncs the insert syncs it too
        if not self.store.create(run_id, text, tagged, now, watchdog=watchdog):
            return False
        self.on_alarm(begun=(Store.just_created(run_id, text, tagged), now, watchdog))
        return True

    # -- on_alarm ------------------------------------------------------------------

    def on_alarm(self, begun: tuple[Loaded, int, int] | None = None) -> None:
        """Run the instance. `begun`: a first run that `create_and_run` has begun, with
        what it knows (the instance as loading it would read it, the clock, the
        watchdog), instead of reading them."""
        self._began = self.just_created = False
        self.finished_as = None
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
        j = self.journal
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
            self._park(self._too_many_bad_runs(loaded.error))
        else:
            self._run(loaded, now)

    def note_trap(self) -> str | None:
        """Why the instance's last event was cut (a trap, a budget), as the host tells
        it: recorded on the attempt it cut, if a step's was pending, and as the
        instance's error, which its status shows and a final failure quotes. Returns
        that error, or None if no cut is pending. (Asked by runs, and by the status: the
        first event after a cut records it.)"""
        reason = self.db.last_trap()
        return None if reason is None else self.store.note_trap(reason)

    def _note_trap(self, loaded: Loaded) -> None:
        error = self.note_trap()
        if error is None:
            return
        loaded.error = error
        p = loaded.pending
        if p is not None and p.kind == STEP_RETRYING:  # as the row now says
            reason = error.removeprefix("its last event was cut: ")
            loaded.pending = p._replace(error=f"attempt {p.attempts} was cut: {reason}")

    def _retain(self, loaded: Loaded, now: int) -> None:
        due = (loaded.finished_at or now) + self.config.retention_ms
        owed = self.family.drain(now)  # a notice to the parent, cancels to children
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
            journal = self._journal(loaded)
            input_value = journal.begin_run(loaded)  # before Run takes its lists
        except JournalError as e:
            return self._unreadable(e, bad)
        mark = self.marks.mark() if loaded.state == COMPENSATING else None
        if mark is not None:
            return cancelled_run(self, loaded, journal, input_value, now, watchdog, mark[1])
        front = self._frontier(loaded, journal, now, watchdog)
        run = Run(journal, front, self.retry, loaded.run_id)
        try:
            output = self.fn(run, input_value)
        except WorkflowSignal as s:
            return self._stopped(run.stopped or s, loaded, front, bad)
        except (StepFailed, Fail) as e:
            return self._failed(run, loaded, front, bad, str(e) or "failed")
        except Exception as e:
            reason = f"the workflow function raised {describe(e)}"
            return self._settle(run, loaded, front, bad, bad_reason=reason)
        self._settle(run, loaded, front, bad, output=output, returned=True)

    def _frontier(self, loaded: Loaded, journal: Journal, now: int, watchdog: int,
                  cancelling: bool = False) -> Frontier:
        make = CancellingFrontier if cancelling else Frontier
        db = ReadOnly(self.db) if cancelling else self.db  # a cancelled function writes nothing
        store = Store(db) if cancelling else self.store
        front = make(store, db, journal, loaded.pending, self.config.max_value_bytes,
                     self.config.run_budget_ms, now)
        front.alarm_at = watchdog
        return front

    # -- compensation (saga/compensations.py) ------------------------------------------------------

    def _failed(self, run: Run, loaded: Loaded, front: Frontier, bad: int,
                error: str | None, state: str = "failed") -> None:
        """The workflow's own failure (or a cancel with compensation, as `state`): its
        compensations run, newest first, as steps after the failure, then it finishes.
        A compensation's backoff or the budget stops the run, compensating."""
        if run.stopped is not None:  # the function swallowed a signal: the signal wins
            return self._stopped(run.stopped, loaded, front, bad)
        if not run._saga and state == "failed":
            return self._finish(state, None, False, error)
        if loaded.state != COMPENSATING:  # said at once: a trap inside one keeps it
            self.marks.compensating(self.db.now())
        try:
            count, failed = run._compensate()
        except WorkflowSignal as s:
            return self._stopped(compensating(run.stopped or s), loaded, front, bad)
        self._finish(state, None, False, outcome(count, failed, error))

    def journal_for(self, loaded: Loaded) -> tuple[Journal, Any]:
        """The journal of `loaded`'s run readied for one run (the warm cache, or a new
        one), and the run's input: what a dry replay (events/dry_replay.py) replays.
        Raises JournalError."""
        journal = self._journal(loaded)
        return journal, journal.begin_run(loaded)

    def _journal(self, loaded: Loaded) -> Journal:
        j = self.journal
        self._warm = j is not None and j.run_id == loaded.run_id and len(j) > 0
        if j is None or j.run_id != loaded.run_id:
            if loaded.input is None:
                raise JournalError("the instance's input was not loaded")
            j = self.journal = Journal(loaded.run_id, loaded.input, loaded.input_tagged)
        return j

    def _settle(self, run: Run, loaded: Loaded, front: Frontier, bad: int, *,
                output: Any = None, returned: bool = False, error: str | None = None,
                bad_reason: str | None = None) -> None:
        if run.stopped is not None:  # the function swallowed a signal: the signal wins
            return self._stopped(run.stopped, loaded, front, bad)
        if bad_reason is not None:
            return self._bad_run(bad, bad_reason, sync=front.unsynced)
        if not returned:
            return self._finish("failed", None, False, error)
        try:
            text, tagged = encode(output, self.config.max_value_bytes, "the workflow's output")
        except (UnsupportedValue, ValueTooLarge) as e:
            return self._finish("failed", None, False, str(e))
        self._finish("completed", text, tagged, None)

    def _stopped(self, s: WorkflowSignal, loaded: Loaded, front: Frontier, bad: int) -> None:
        if isinstance(s, Suspend):
            return self._suspend(s, loaded, front)
        if isinstance(s, ContinueAsNew):
            return self._continue(s.input)
        if isinstance(s, Reordered | CodeError):
            return self._park(str(s))
        if isinstance(s, JournalError):
            return self._unreadable(s, bad)
        raise s  # StoreFault, or a signal this runner does not know: on_alarm handles it

    def _suspend(self, s: Suspend, loaded: Loaded, front: Frontier) -> None:
        now = self.db.now()
        wake = now if s.wake_at is None else s.wake_at
        changed = (s.state, s.wake_at, s.waiting_for) != (
            loaded.state, loaded.wake_at, loaded.waiting_for) or loaded.error is not None
        # Only a change of the reported state needs an fsync; an unchanged one (an event
        # that did not wake it, say) only clears the bad-run count.
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
            return self._finish("failed", None, False, str(e))
        now = self.db.now()
        self.db.alarm_set(now)
        self.forget()
        self.store.continue_as_new(self.new_run_id(), text, tagged, now)

    def _unreadable(self, e: JournalError, bad: int) -> None:
        """A recorded entry this runner cannot read. Read fresh from the database, the
        history itself is at fault, and retrying the same code cannot change it: park.
        Met in the warm cache, the cache may be: drop it, and the next run (after a bad
        run's backoff) reads everything again."""
        warm, self._warm = self._warm, False
        self.forget()
        if not warm:
            return self._park(str(e))
        self._bad_run(bad, str(e))

    def _bad_run(self, bad: int, reason: str, sync: bool = False) -> None:
        if bad >= self.config.max_bad_runs:
            return self._park(self._too_many_bad_runs(reason))
        # The watchdog alarm set at the start brings the next run after its backoff.
        # `sync`: steps of this run recorded outcomes that the next status would report.
        self.store.note_bad_run(reason, self.db.now(), durable=sync)

    def _too_many_bad_runs(self, last: str | None) -> str:
        return (
            f"{self.config.max_bad_runs} runs in a row ended without the workflow function "
            "returning (an exception or trap outside any step, or a replay over the event's "
            f"budget); the last reason known: {last or 'none recorded (a trap or a cut)'}"
        )

    def _park(self, reason: str) -> None:
        """Park the instance (see the module's doc): durably, then its alarm cleared, in
        that order, so that a cut in between leaves an alarm that finds it parked."""
        self.store.park(reason, self.db.now())
        self.db.alarm_clear()

    def _finish(self, state: str, output: str | None, tagged: bool, error: str | None) -> None:
        now = self.db.now()
        due = now + self.config.retention_ms
        if self.store.finish(state, output, tagged, error, now):
            self.finished_as = (state, output, tagged, error, now)
            owed = self.family.finished(state, output, tagged, error, now)
            if owed is not None:
                due = min(due, owed)
        self.db.alarm_set(due)

    def cancel(self, compensate: bool = False) -> None:
        """An operator's or a client's cancel (the protocol's cancel route) of an
        unfinished instance: it finishes as cancelled at once, and its retention begins.
        `compensate`: its next run, from now, replays the function to its first new
        position, runs its compensations and then finishes it as cancelled (saga/compensations.py).
        A parked instance never compensates: it is cancelled at once; one already
        compensating (its own failure, or a cancel before) goes on as it is."""
        if compensate:
            state = self.marks.state()
            if state == COMPENSATING:
                return
            if state != PARKED:
                self.db.alarm_set(self.db.now())  # first: a cut before the mark runs it
                self.marks.ask(self.db.now())
                return
        # The alarm first: a parked instance holds none, and a cut after the finish's
        # COMMIT must still leave one for its retention.
        self.db.alarm_set(self.db.now() + self.config.retention_ms)
        self._finish("cancelled", None, False, None)

    def terminate(self, reason: str) -> None:
        """An operator's terminate of an unfinished instance (operator/moves.py): it finishes as
        terminated at once, with `reason` as its error, compensating nothing, and its
        retention begins. Its children not detached are terminated in turn (children/notices.py),
        as a cancelled parent's are cancelled. The alarm first, as for a cancel."""
        self.forget()
        self.db.alarm_set(self.db.now() + self.config.retention_ms)
        self._finish("terminated", None, False, reason)
