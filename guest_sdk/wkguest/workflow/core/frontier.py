"""New positions: what a run does past the recorded journal.

At most one position per run is new work that may stop the run: a step's attempt (with
its retries and backoff; a tx step's is one transaction with its record, tx.py), a sleep,
or a wait. The deterministic helpers' values and patch
markers are new positions too, recorded without stopping (`record`). Recorded positions
never get here; they are answered by `Run` from the journal.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, cast

from ..errors import NonRetryable, Reordered, Suspend, UnsupportedValue, ValueTooLarge
from . import policy, timeouts
from .attempt_history import COUNTED, FAILED, RETURNED, TIMED_OUT, Attempts, Meter, was_cut
from .attempt_history import STEP as STEP_ONLY
from .backend import Backend
from .config import Retry
from .context import StepContext
from .helper_records import put_recorded
from .journal import Journal
from .kinds import (
    NOW,
    NOW_TAKEN,
    PATCH_MARKER,
    PATCHED,
    RANDOM,
    SLEEP,
    SLEEP_PASSED,
    SLEEPING,
    STEP,
    STEP_FAILED,
    STEP_RETRYING,
    STEP_RETURNED,
    STEP_RETURNED_TAGGED,
    UUID,
    WAIT,
    WAIT_TIMED_OUT,
    WAIT_TOOK_EVENT,
    WAIT_TOOK_EVENT_TAGGED,
    WAITING,
    Pending,
    call_of,
    shown,
)
from .store import Store
from .tx import Tables, Transaction
from .values import encode, revive

# Exact types, not subclasses: an IntEnum or a str subclass decodes as its base type.
_SCALARS = frozenset({str, int, float, bool, type(None)})

MAX_ERROR_CHARS = 4000
CUT = COUNTED  # the error an attempt is counted with: what it leaves if it never ends

# (ok, value, error, attempts): what a step came to
Outcome = tuple[bool, Any, str | None, int]


def describe(e: BaseException) -> str:
    """An exception as one recorded line: "Type: message" (NonRetryable: the message)."""
    msg = str(e)
    if isinstance(e, NonRetryable):
        text = msg or type(e).__name__
    else:
        text = f"{type(e).__name__}: {msg}" if msg else type(e).__name__
    return text.replace("\n", " ")[:MAX_ERROR_CHARS]


def reordered(pos: int, kind: str, recorded: str, call: str, name: str) -> Reordered:
    hint = "" if kind != PATCH_MARKER else (
        f" (a patch marker: where the code no longer asks wf.patched({recorded!r}), keep "
        f"wf.deprecate_patch({recorded!r}) until no running instance holds the marker)")
    return Reordered(
        f"the code changed the order of its steps: position {pos} was recorded as "
        f"{_named(call_of(kind), shown(recorded) or recorded)}{hint}, and the code now "
        f"reaches {_named(call, shown(name) or name)} there. Running instances need the "
        "recorded order (new steps may only follow the recorded ones); serve changed code "
        "as a new class."
    )


def _named(call: str, name: str) -> str:
    """A position's primitive as an error names it: "step 'charge'", "wf.now()"."""
    if call in _HELPERS:
        return f"wf.{call}()"
    if call == PATCHED:
        return f"wf.patched({name!r})"
    return f"{call} {name!r}"


_HELPERS = frozenset({NOW, RANDOM, UUID})


class Frontier:
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
        self.meter: Meter | None = None  # the attempt under way
        self.context: StepContext | None = None  # its context, while its function runs

    def _pending(self, pos: int, kind: str, call: str, name: str) -> Pending | None:
        p = self.pending
        if p is None or p.pos != pos:
            return None
        if p.kind != kind or p.name != name:
            raise reordered(pos, p.kind, p.name, call, name)
        return p

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

    # -- steps ---------------------------------------------------------------------

    def step(self, pos: int, name: str, fn: Callable[..., Any], retry: Retry,
             tables: Tables | None = None) -> Outcome:
        """One attempt of step `name` (or its final error, if the attempts ran out).
        `tables`: a tx step (tx.py), whose attempt is one transaction with its record;
        `fn` then takes the transaction's handle."""
        p = self._pending(pos, STEP_RETRYING, STEP, name)
        attempts = p.attempts if p else 0
        cut = p is not None and attempts > 0 and was_cut(p.error, attempts)
        timed_out = timeouts.cut_message(p.error, attempts, retry.timeout_ms) if p else None
        if attempts >= retry.attempts:  # the last attempt was cut: no result will come
            if cut:
                self.attempts.cut(pos, timed_out=timed_out)
            return self._give_up(pos, name, timed_out or (p.error if p else None)
                                 or CUT.format(n=attempts), attempts)
        now = self.db.now()
        if p and p.next_attempt_at is not None and now < p.next_attempt_at:
            # a backoff is pending: an early event waits too
            raise Suspend("running", p.next_attempt_at)
        if self.new_steps and now - self.started_at >= self.budget_ms:
            raise Suspend("running", now)  # the budget is spent: go on in a new event
        attempt = attempts + 1
        self._count(pos, name, attempt, retry, now, cut, timed_out)
        tx = None if tables is None else Transaction(self.db, name, tables, self.journal.made)
        ctx = StepContext(name, attempt, pos, f"{self.journal.run_id}-{pos}",
                          timeouts.deadline(retry.timeout_ms, now), self.journal)
        return self._attempt(pos, ctx, fn, retry, tx, now)

    def _attempt(self, pos: int, ctx: StepContext, fn: Callable[..., Any], retry: Retry,
                 tx: Transaction | None, now: int) -> Outcome:
        """Run the attempt counted at `now`, and record how it ended."""
        name, attempt, limit = ctx.name, ctx.attempt, retry.timeout_ms
        self.context = ctx
        try:
            # A tx attempt's exception has rolled its writes back before it gets here.
            value = timeouts.call(self.db, fn if tx is None else lambda: tx.run(fn), limit)
        except NonRetryable as e:
            error = describe(e)
            if timeouts.overran(self.db, limit, now, e):
                return self._give_up(pos, name, timeouts.message(attempt, limit, error),
                                     attempt, TIMED_OUT)
            return self._give_up(pos, name, error, attempt)
        except Exception as e:
            if not timeouts.overran(self.db, limit, now, e):
                return self._failed(pos, ctx, describe(e), retry, e)
            error = timeouts.message(attempt, limit, describe(e))
            return self._failed(pos, ctx, error, retry, timeouts.exception(error, e), TIMED_OUT)
        finally:
            self.context = None
        if timeouts.overran(self.db, limit, now):
            if tx is not None:
                tx.rollback()
            error = timeouts.message(attempt, limit)
            return self._failed(pos, ctx, error, retry, timeouts.exception(error, None), TIMED_OUT)
        return self._returned(pos, name, value, attempt, tx)

    def _count(self, pos: int, name: str, attempt: int, retry: Retry, now: int,
               cut: bool, timed_out: str | None = None) -> None:
        """Count attempt `attempt` before its function runs, with the error it leaves if
        it never returns: a trap inside the function then counts, and the watchdog alarm
        brings the next attempt. `cut`: the attempt before it never ended; its history
        row is copied from the step's row first (attempt_history.py), as timed out if it was cut
        at its narrowed deadline (`timed_out`: its error)."""
        retry_at = now + retry.backoff(attempt)
        self.watch(retry_at, now)
        if cut:
            self.attempts.cut(pos, timed_out=timed_out)
        self.store.count_attempt(pos, name, attempt, CUT.format(n=attempt), retry_at, now)
        if self.bad_runs_open:
            self.store.clear_bad_runs()  # this run got into a step: not a bad run
            self.bad_runs_open = False
        self.new_steps += 1
        self.pending = None
        self.meter = self.attempts.begin(pos, STEP_ONLY, attempt, now)

    def _end(self, outcome: str, error: str | None, now: int | None = None) -> None:
        """The attempt under way ended: its history row (attempt_history.py), once."""
        m, self.meter = self.meter, None
        if m is not None:
            self.attempts.end(m, outcome, error, now)

    def _returned(self, pos: int, name: str, value: Any, attempt: int,
                  tx: Transaction | None) -> Outcome:
        try:
            text, tagged = encode(value, self.limit, f"the result of step {name!r}")
        except (UnsupportedValue, ValueTooLarge) as e:
            # Not retried: the same code would most likely return the same kind of value.
            if tx is not None:
                tx.rollback()
            return self._give_up(pos, name, str(e), attempt)
        kind = STEP_RETURNED_TAGGED if tagged else STEP_RETURNED
        now = self.db.now()
        self._end(RETURNED, None, now)  # a tx step's: inside its transaction, as its result
        if tx is None:
            self.store.put_final(pos, kind, name, text, now, durable=False)
        else:  # the result inside the attempt's transaction, then its COMMIT
            tx.commit(lambda: self.store.put_final(pos, kind, name, text, now,
                                                   durable=False))
        self.unsynced = True
        # A plain scalar comes back from its JSON as itself: decoding it again (slow for a
        # big str in a guest) would only make an equal copy.
        raw = value if not tagged and type(value) in _SCALARS else json.loads(text)
        self.journal.append(kind, name, text, raw)
        # attempts 0: a replay cannot tell how many attempts a success took, so no run can
        return True, (revive(raw) if tagged else raw), None, 0

    def _failed(self, pos: int, ctx: StepContext, error: str, retry: Retry, exc: Exception,
                outcome: str = FAILED) -> Outcome:
        name, attempt = ctx.name, ctx.attempt
        self._end(outcome, error)
        if attempt >= retry.attempts:
            return self._give_up(pos, name, error, attempt)
        try:
            wait = policy.wait_after(retry, attempt, ctx, exc)
        except policy.DelayFailed as e:
            return self._give_up(pos, name, policy.delay_failed(e, attempt, error), attempt)
        now = self.db.now()
        retry_at = now + wait
        self.store.retry_later(pos, error, retry_at, now)
        raise Suspend("running", retry_at)

    def _give_up(self, pos: int, name: str, error: str, attempts: int,
                 outcome: str = FAILED) -> Outcome:
        self._end(outcome, error)
        text = json.dumps([error, attempts], ensure_ascii=False, separators=(",", ":"))
        self.store.put_final(pos, STEP_FAILED, name, text, self.db.now(), error=error,
                             durable=False)
        self.unsynced = True
        self.journal.append(STEP_FAILED, name, text, [error, attempts])
        self.pending = None
        return False, None, error, attempts

    # -- sleeps and waits ----------------------------------------------------------

    def sleep(self, pos: int, name: str, wake: int) -> None:
        """Sleep until `wake`, or until the recorded wake time if this one is pending."""
        p = self._pending(pos, SLEEPING, SLEEP, name)
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
        p = self._pending(pos, WAITING, WAIT, name)
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
        patch marker at the new position `pos`, with the run's next commit (helper_records.py).
        Raises Reordered where the pending entry is: the old code reached a step there."""
        p = self.pending
        if p is not None and p.pos == pos:
            raise reordered(pos, p.kind, p.name, call_of(kind), name)
        text = encode(value, self.limit, f"the value of wf.{call_of(kind)}()")[0]
        at = value if kind == NOW_TAKEN else self.db.now()
        put_recorded(self.db, pos, kind, name, text, at)
        self.unsynced = True
        self.journal.append(kind, name, text, value)
        return value
