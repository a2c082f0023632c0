"""New positions: what a run does past the recorded journal.

At most one position per run is new work that may stop the run: a step's attempt
(attempt.py), a sleep, a wait, or a group's turn (groups/turns.py). The deterministic
helpers' values and patch markers are new positions too, recorded without stopping
(`record`). Recorded positions never get here; they are answered by the Cursor from the
journal.

The Frontier is the run's new work's state: the pending entry at the last position, the
alarm this event set, what is still to be synced, the event's budget of new steps, and
the attempts under way (under_way.py). A step's attempt machine (attempt.py) and a
group's turns use it through its public methods.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, cast

from ..backend import Backend
from ..errors import Suspend, WorkflowSignal
from .attempt_history import Attempts
from .context import StepContext
from .explain import reordered
from .helper_records import put_recorded
from .journal import Journal
from .kinds import (
    NOW_TAKEN,
    SLEEP,
    SLEEP_PASSED,
    SLEEPING,
    WAIT,
    WAIT_TIMED_OUT,
    WAIT_TOOK_EVENT,
    WAIT_TOOK_EVENT_TAGGED,
    WAITING,
    Pending,
    call_of,
)
from .mocks import Mocks
from .store import Store
from .under_way import Attempt, Slot
from .values import encode, revive


class Frontier:
    """Where one run's replay meets its new work (see the module's docstring): what the
    new positions of one run share, from the run's start to its end (settle.py)."""

    def __init__(self, store: Store, db: Backend, journal: Journal, pending: Pending | None,
                 limit: int, budget_ms: int, started_at: int) -> None:
        self.store = store
        self.db = db
        self.journal = journal
        self.pending = pending
        self.limit = limit
        self.budget_ms = budget_ms
        self.started_at = started_at
        self.new_steps = 0
        self.alarm_at: int | None = None
        self.bad_runs_open = True  # this run's count of bad runs is still to be cleared
        # Step outcomes recorded by this run but not yet fsynced. The run's last write
        # (end_run or finish, exec_durable) syncs them with itself: one fsync per event
        # instead of one per step, and nothing is reported before that last write.
        self.unsynced = False
        self.attempts = Attempts(store)  # each attempt's history row (attempt_history.py)
        self.in_flight: list[Attempt] = []  # the attempts under way, oldest first
        self.running: Attempt | None = None  # the one whose function runs now
        # A run that may do no new work (a cancel with compensation, saga/cancelling.py):
        # what stops it at the first new position.
        self.refusal: Callable[[int], WorkflowSignal] | None = None
        self.mocks: Mocks | None = None  # a test's (mocks.py): None but in tests
        # The updates accepted and not yet taken, as the run's load counted them: a dry
        # replay's none, so it takes none (updates/taking.py).
        self.updates_waiting = 0

    def pending_at(self, pos: int, kind: str, call: str, name: str) -> Pending | None:
        """The pending entry at `pos` if it is there: of `kind` and `name`, or Reordered
        (the old code reached `call` there). None: nothing is pending at `pos`."""
        p = self.pending
        if p is None or p.pos != pos:
            return None
        if p.kind != kind or p.name != name:
            raise reordered(pos, p.kind, p.name, call, name)
        return p

    def open(self, pos: int) -> None:
        """New work begins at `pos`: raises the refusal of a run that may do none."""
        if self.refusal is not None:
            raise self.refusal(pos)

    def arm(self, at: int) -> None:
        """Set the alarm to `at` unless this event already set it there."""
        if at != self.alarm_at:
            self.db.alarm_set(at)
            self.alarm_at = at

    def watch(self, by: int, now: int) -> None:
        """Make sure a watchdog alarm fires by `by`, should this run be cut.

        An alarm this event already set, still ahead and no later than `by`, serves too:
        firing early only makes the next run find the backoff pending and re-arm. So a
        run of new steps with the usual backoffs sets the alarm once, not once a step
        (each set is a host call and a write)."""
        armed = self.alarm_at
        if armed is None or not now < armed <= by:
            self.arm(by)

    # -- the attempts under way (a step's, a branch's) ----------------------------------

    @property
    def context(self) -> StepContext | None:
        """The context of the attempt whose function runs now (wf.step_context), if any."""
        return None if self.running is None else self.running.context

    def budget_spent(self, now: int) -> bool:
        """Whether this event's budget is spent: a new step then goes on in a new event."""
        return bool(self.new_steps) and now - self.started_at >= self.budget_ms

    def into_a_step(self, slot: Slot) -> None:
        """An attempt of the step in `slot` is about to be counted: this run got into a
        step, so it is not a bad run. The count carries the write that says so, in the
        same call, when the count is the Store's (`slot.carries`)."""
        if self.bad_runs_open:
            self.store.clear_bad_runs(carried=slot.carries)
            self.bad_runs_open = False

    def begin_attempt(self, slot: Slot, pos: int, n: int, now: int,
                      timeout_ms: int | None) -> Attempt:
        """Attempt `n` of the step in `slot` at `pos` was counted at `now`: it is under
        way until it ends."""
        self.new_steps += 1
        return Attempt(slot, pos, n, now, timeout_ms, self.journal, self.attempts,
                       self.in_flight)

    # -- sleeps and waits ----------------------------------------------------------

    def sleep(self, pos: int, name: str, wake: int) -> None:
        """Sleep until `wake`, or until the recorded wake time if this one is pending."""
        self.open(pos)
        p = self.pending_at(pos, SLEEPING, SLEEP, name)
        now = self.db.now()
        if p:
            wake = cast(int, p.wake_at)  # put_pending recorded one
        elif wake > now:
            self.store.put_pending(pos, SLEEPING, name, wake, now)  # recorded once, durably
            self.pending = Pending(pos, SLEEPING, name, 0, None, wake, None)
        if now < wake:
            raise Suspend("waiting", wake)
        # A plain write is enough: if it is lost, the next run sees the time has passed.
        self.store.put_final(pos, SLEEP_PASSED, name, "null", now, wake_at=wake, durable=False)
        self.journal.append(SLEEP_PASSED, name, "null", None)
        self.pending = None

    def wait(self, pos: int, name: str, timeout_ms: int) -> Any:
        """The oldest event `name` received by the deadline, or None once it has passed."""
        self.open(pos)
        p = self.pending_at(pos, WAITING, WAIT, name)
        now = self.db.now()
        deadline = cast(int, p.wake_at) if p else now + timeout_ms
        got = self.store.oldest_event(name, deadline)
        if got is not None:
            seq, text, tagged = got
            self.store.take_event(pos, name, deadline, seq, text, tagged, now)
            self.unsynced = True  # the run's last write syncs the take
            raw = json.loads(text)
            kind = WAIT_TOOK_EVENT_TAGGED if tagged else WAIT_TOOK_EVENT
            self.journal.append(kind, name, text, raw)
            self.pending = None
            return revive(raw) if tagged else raw
        if now >= deadline:
            self.store.put_final(pos, WAIT_TIMED_OUT, name, "null", now, wake_at=deadline)
            self.journal.append(WAIT_TIMED_OUT, name, "null", None)
            self.pending = None
            return None
        if p is None:
            self.store.put_pending(pos, WAITING, name, deadline, now)
            self.pending = Pending(pos, WAITING, name, 0, None, deadline, None)
        raise Suspend("waiting", deadline, name)

    # -- recorded values -----------------------------------------------------------

    def record(self, pos: int, kind: str, name: str, value: Any) -> Any:
        """Record a helper's `value` (a scalar, which JSON gives back as itself) or a
        patch marker at the new position `pos`, with the run's next commit
        (helper_records.py). Raises Reordered where the pending entry is: the old code
        reached a step there."""
        self.open(pos)
        p = self.pending
        if p is not None and p.pos == pos:
            raise reordered(pos, p.kind, p.name, call_of(kind), name)
        text = encode(value, self.limit, f"the value of wf.{call_of(kind)}()")[0]
        at = value if kind == NOW_TAKEN else self.db.now()
        put_recorded(self.db, pos, kind, name, text, at)
        self.unsynced = True
        self.journal.append(kind, name, text, value)
        return value
