"""A step's attempts: the one attempt machine of a step and of a group's step branch
(`attempt`), what a step came to (`Outcome`, `StepResult`), and a step's own slot, its
journal position (`StepSlot`).

One attempt per slot and run, at most: it is counted before its function runs (so a trap
inside it counts, and the watchdog alarm brings the next), then run under the step's
timeout (timeouts.py), and it ends returned (its result recorded), failed (retried after
its backoff, policy.py) or given up (the final error). Where the attempts are counted and
how each end is recorded is the slot's: a journal position (`StepSlot`; a tx step's
attempt is one transaction with its record, tx.py) or a group's branch row
(groups/branch_attempts.py). The machine keeps no state of its own between calls: the
slot and the frontier hold it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from ..backend import TRAP_NARROWED_DEADLINE
from ..errors import NonRetryable, Suspend, UnsupportedValue, ValueTooLarge
from . import policy, timeouts
from .attempt_history import FAILED, RETURNED, TIMED_OUT
from .attempt_history import STEP as STEP_ONLY
from .config import Retry
from .context import StepContext
from .explain import describe
from .frontier import Frontier
from .kinds import (
    COUNTED,
    STEP,
    STEP_FAILED,
    STEP_RETRYING,
    STEP_RETURNED,
    STEP_RETURNED_TAGGED,
)
from .tx import Tables, Transaction
from .values import encode, revive

# Exact types, not subclasses: an IntEnum or a str subclass decodes as its base type.
_SCALARS = frozenset({str, int, float, bool, type(None)})

# (ok, value, error, attempts): what a step came to
Outcome = tuple[bool, Any, str | None, int]


@dataclass(frozen=True)
class StepResult:
    """What `try_step` returns: `ok` and `value`, or `error` (one line) and how many
    `attempts` the step made. A success reports attempts 0, on the first run as on replay
    (the journal keeps a success's value, not its count)."""

    ok: bool
    value: Any = None
    error: str | None = None
    attempts: int = 0


class Slot(Protocol):
    """Where a step's attempts are counted and their ends recorded."""

    name: str
    idx: int  # its attempts' history idx: STEP_ONLY for a step, a branch's index
    key: str  # its idempotency key, as its StepContext gives it

    def prior(self) -> tuple[int, str | None, int | None, str | None]:
        """The attempts counted so far, the last one's error, the next one's earliest,
        and the last one's cut (kinds.CUT_OPEN, the host's kind, or None: it ended)."""

    def budget_spent(self, now: int) -> bool:
        """Whether the event's budget of new attempts is spent."""

    def not_yet(self, at: int) -> Any:
        """No attempt now: the next is due at `at` (a backoff, or the budget spent)."""

    def count(self, attempt: int, error: str, retry_at: int, now: int) -> None:
        """Count `attempt` before it runs, with the `error` it leaves if it never ends."""

    def retry_later(self, attempt: int, error: str, at: int, now: int) -> Any:
        """`attempt` failed with `error`: the next is due at `at`."""

    def returned(self, value: Any, attempt: int, tx: Transaction | None) -> Any:
        """`attempt` returned `value` (`tx`: its transaction, still open)."""

    def give_up(self, error: str, attempts: int, outcome: str = FAILED) -> Any:
        """The step failed for good with `error` after `attempts` (the attempt under
        way, if any, ended as `outcome`)."""


def attempt(front: Frontier, pos: int, slot: Slot, fn: Callable[..., Any], retry: Retry,
            tables: Tables | None = None) -> Any:
    """One attempt of the step in `slot` at position `pos`, or its final error if the
    attempts ran out: what the slot answers for how it ended. `tables`: a tx step's, whose
    attempt is one transaction with its record; `fn` then takes its handle."""
    attempts, error, next_at, cut = slot.prior()
    timed_out = None
    if cut == TRAP_NARROWED_DEADLINE:  # the host cut it at the deadline its timeout set
        why = front.attempts.reason(pos, slot.idx, attempts)
        timed_out = timeouts.message(attempts, retry.timeout_ms, why)
    if attempts >= retry.attempts:  # the last attempt was cut: no result will come
        if cut is not None:
            front.attempts.cut(pos, slot.idx, attempts, timed_out)
        return slot.give_up(timed_out or error or COUNTED.format(n=attempts), attempts)
    now = front.db.now()
    if next_at is not None and now < next_at:
        return slot.not_yet(next_at)  # a backoff is pending: an early event waits too
    if slot.budget_spent(now):
        return slot.not_yet(now)  # go on in a new event
    n = attempts + 1
    _count(front, pos, slot, n, retry, now, timed_out, cut is not None)
    tx = None if tables is None else Transaction(front.db, slot.name, tables,
                                                 front.journal.made)
    ctx = StepContext(slot.name, n, pos, slot.key, timeouts.deadline(retry.timeout_ms, now),
                      front.journal)
    return _run(front, slot, ctx, fn, retry, tx, now)


def _count(front: Frontier, pos: int, slot: Slot, n: int, retry: Retry, now: int,
           timed_out: str | None, cut: bool) -> None:
    """Count attempt `n` before its function runs: a trap inside the function then
    counts, and the watchdog alarm brings the next attempt. `cut`: the attempt before it
    never ended; its history row is copied from the slot's row first
    (attempt_history.py), as timed out if it was cut at its narrowed deadline."""
    retry_at = now + retry.backoff(n)
    front.watch(retry_at, now)
    if cut:
        front.attempts.cut(pos, slot.idx, n - 1, timed_out)
    slot.count(n, COUNTED.format(n=n), retry_at, now)
    front.begin_attempt(pos, slot.idx, n, now)


def _run(front: Frontier, slot: Slot, ctx: StepContext, fn: Callable[..., Any],
         retry: Retry, tx: Transaction | None, now: int) -> Any:
    """Run the attempt counted at `now`, and record how it ended."""
    n, limit, db = ctx.attempt, retry.timeout_ms, front.db
    front.context = ctx
    try:
        # A tx attempt's exception has rolled its writes back before it gets here.
        value = timeouts.call(db, fn if tx is None else lambda: tx.run(fn), limit)
    except NonRetryable as e:
        error = describe(e)
        if timeouts.overran(db, limit, now, e):
            return slot.give_up(timeouts.message(n, limit, error), n, TIMED_OUT)
        return slot.give_up(error, n)
    except Exception as e:
        if not timeouts.overran(db, limit, now, e):
            return _failed(front, slot, ctx, describe(e), retry, e)
        error = timeouts.message(n, limit, describe(e))
        return _failed(front, slot, ctx, error, retry, timeouts.exception(error, e), TIMED_OUT)
    finally:
        front.context = None
    if timeouts.overran(db, limit, now):
        if tx is not None:
            tx.rollback()
        error = timeouts.message(n, limit)
        return _failed(front, slot, ctx, error, retry, timeouts.exception(error, None),
                       TIMED_OUT)
    return slot.returned(value, n, tx)


def _failed(front: Frontier, slot: Slot, ctx: StepContext, error: str, retry: Retry,
            exc: Exception, outcome: str = FAILED) -> Any:
    n = ctx.attempt
    front.end_attempt(outcome, error)
    if n >= retry.attempts:
        return slot.give_up(error, n)
    try:
        wait = policy.wait_after(retry, n, ctx, exc)
    except policy.DelayFailed as e:
        return slot.give_up(policy.delay_failed(e, n, error), n)
    now = front.db.now()
    return slot.retry_later(n, error, now + wait, now)


# -- a step's slot: its journal position ------------------------------------------------

def step(front: Frontier, pos: int, name: str, fn: Callable[..., Any], retry: Retry,
         tables: Tables | None = None) -> Outcome:
    """One attempt of step `name` at new position `pos` (see `attempt`)."""
    front.open(pos)
    out: Outcome = attempt(front, pos, StepSlot(front, pos, name), fn, retry, tables)
    return out


class StepSlot:
    """A step's journal position: its pending entry counts the attempts, and its end is
    the position's final entry. An attempt not due yet stops the run (Suspend)."""

    __slots__ = ("front", "pos", "name", "idx", "key", "pending")

    def __init__(self, front: Frontier, pos: int, name: str) -> None:
        self.front, self.pos, self.name, self.idx = front, pos, name, STEP_ONLY
        self.key = f"{front.journal.run_id}-{pos}"
        self.pending = front.pending_at(pos, STEP_RETRYING, STEP, name)

    def prior(self) -> tuple[int, str | None, int | None, str | None]:
        p = self.pending
        if p is None:
            return 0, None, None, None
        # The cut, and the error as a run that noted the cut left it (cuts.py): read
        # again, only for a step with an attempt counted before (never a first attempt).
        cut, error = self.front.store.attempt_at(self.pos)
        return p.attempts, error, p.next_attempt_at, cut

    def budget_spent(self, now: int) -> bool:
        return self.front.budget_spent(now)

    def not_yet(self, at: int) -> Any:
        raise Suspend("running", at)

    def count(self, attempt: int, error: str, retry_at: int, now: int) -> None:
        self.front.store.count_attempt(self.pos, self.name, attempt, error, retry_at, now)
        self.front.pending = None

    def retry_later(self, attempt: int, error: str, at: int, now: int) -> Any:
        self.front.store.retry_later(self.pos, error, at, now)
        raise Suspend("running", at)

    def returned(self, value: Any, attempt: int, tx: Transaction | None) -> Outcome:
        front, pos, name = self.front, self.pos, self.name
        try:
            text, tagged = encode(value, front.limit, f"the result of step {name!r}")
        except (UnsupportedValue, ValueTooLarge) as e:
            # Not retried: the same code would most likely return the same kind of value.
            if tx is not None:
                tx.rollback()
            return self.give_up(str(e), attempt)
        kind = STEP_RETURNED_TAGGED if tagged else STEP_RETURNED
        store, now = front.store, front.db.now()
        front.end_attempt(RETURNED, None, now)  # a tx step's: inside its transaction
        if tx is None:
            store.put_final(pos, kind, name, text, now, durable=False)
        else:  # the result inside the attempt's transaction, then its COMMIT
            tx.commit(lambda: store.put_final(pos, kind, name, text, now, durable=False))
        front.unsynced = True
        # A plain scalar comes back from its JSON as itself: decoding it again (slow for
        # a big str in a guest) would only make an equal copy.
        raw = value if not tagged and type(value) in _SCALARS else json.loads(text)
        front.journal.append(kind, name, text, raw)
        # attempts 0: a replay cannot tell how many attempts a success took, so no run can
        return True, (revive(raw) if tagged else raw), None, 0

    def give_up(self, error: str, attempts: int, outcome: str = FAILED) -> Outcome:
        return give_up(self.front, self.pos, self.name, error, attempts, outcome)


def give_up(front: Frontier, pos: int, name: str, error: str, attempts: int,
            outcome: str = FAILED) -> Outcome:
    """The step at `pos` failed for good with `error` after `attempts`: recorded."""
    front.end_attempt(outcome, error)
    text = json.dumps([error, attempts], ensure_ascii=False, separators=(",", ":"))
    front.store.put_final(pos, STEP_FAILED, name, text, front.db.now(), error=error,
                          durable=False)
    front.unsynced = True
    front.journal.append(STEP_FAILED, name, text, [error, attempts])
    front.pending = None
    return False, None, error, attempts
