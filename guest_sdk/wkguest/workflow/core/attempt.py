"""A step's attempts: the one attempt machine of a step and of a group's step branch
(`attempt`), what a step came to (`Outcome`, `StepResult`), and a step's own slot, its
journal position (`StepSlot`).

One attempt per slot and run, at most: it is counted before its function runs (so a trap
inside it counts, and the watchdog alarm brings the next), then run under the step's
timeout (timeouts.py), and it ends returned (its value encoded, then recorded), failed
(retried after its backoff, policy.py) or given up (the final error). The machine makes
each attempt an object (under_way.py's `Attempt`), and records its end in one place
(`_ended`, `_returned`: `Attempt.end`); where attempts are counted and what they came to
recorded is the slot's: a journal position (`StepSlot`; a tx step's attempt is one
transaction with its record, tx.py) or a group's branch row (groups/branch_attempts.py).
The machine keeps no state of its own between calls: the slot and the frontier hold it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import CoroutineType
from typing import Any

from ... import idempotency
from ...idempotency import Keys
from ...overlap_loop import Task
from ..backend import TRAP_NARROWED_DEADLINE
from ..errors import NonRetryable, UnsupportedValue, ValueTooLarge
from . import counted, mocks, overlapping, policy, timeouts, told, tracebacks
from .attempt_history import FAILED, RETURNED, TIMED_OUT
from .config import Retry
from .explain import describe
from .frontier import Frontier
from .kinds import (
    COUNTED,
)
from .mocks import Rule
from .step_slot import Outcome, StepSlot
from .tx import Tables, Transaction
from .under_way import Attempt, Slot
from .values import encode


@dataclass(frozen=True)
class StepResult:
    """What `try_step` returns: `ok` and `value`, or `error` (one line) and how many
    `attempts` the step made. A success reports attempts 0, on the first run as on replay
    (the journal keeps a success's value, not its count)."""

    ok: bool
    value: Any = None
    error: str | None = None
    attempts: int = 0


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
        return _give_up(front, pos, slot, timed_out or error or COUNTED.format(n=attempts),
                        attempts)
    now = front.attempts.clock()
    if next_at is not None and now < next_at:
        return slot.not_yet(next_at)  # a backoff is pending: an early event waits too
    if slot.budget_spent(now):
        return slot.not_yet(now)  # go on in a new event
    n = attempts + 1
    att = _count(front, pos, slot, n, retry, now, timed_out, cut is not None)
    if front.mocks is not None:  # a test's (mocks.py): its rule, if one covers attempt n
        rule = front.mocks.step_rule(slot.name, n)
        if rule is not None:
            return _mocked(front, att, retry, rule)
    tx = None if tables is None else Transaction(front.db, slot.name, tables,
                                                 front.journal.made)
    return _run(front, att, fn, retry, tx)


def _count(front: Frontier, pos: int, slot: Slot, n: int, retry: Retry, now: int,
           timed_out: str | None, cut: bool) -> Attempt:
    """Count attempt `n` before its function runs: a trap inside the function then
    counts, and the watchdog alarm brings the next attempt. `cut`: the attempt before it
    never ended; its history row is copied from the slot's row first
    (attempt_history.py), as timed out if it was cut at its narrowed deadline."""
    retry_at = now + retry.backoff(n)
    front.watch(retry_at, now)
    if cut:  # the attempt before was cut, not ended: this one is its retry
        front.attempts.cut(pos, slot.idx, n - 1, timed_out)
        counted.retried(front.db, slot.name)
    front.into_a_step(slot)
    slot.count(n, COUNTED.format(n=n), retry_at, now)
    return front.begin_attempt(slot, pos, n, now, retry.timeout_ms)


def _run(front: Frontier, att: Attempt, fn: Callable[..., Any], retry: Retry,
         tx: Transaction | None) -> Any:
    """Run the attempt counted at `att.started_at`, and end it; or, for a group's async
    branch, hand its coroutine to the group (overlapping.py) and answer PENDING."""
    outer, methods = idempotency.current, retry.key_methods
    idempotency.current = keys = Keys(att.slot.key, methods) if methods else None
    front.running = att
    try:
        # A tx attempt's exception has rolled its writes back before it gets here.
        value = timeouts.call(front.db, fn if tx is None else lambda: tx.run(fn),
                              retry.timeout_ms)
        if isinstance(value, CoroutineType):  # an async function's
            value = overlapping.take(front, att, value, keys, tx, retry.timeout_ms,
                                     lambda task: _after(front, att, retry, task))
            if value is overlapping.PENDING:
                return value
    except Exception as e:
        return _raised(front, att, retry, e)
    finally:
        front.running = None
        idempotency.current = outer
    if retry.timeout_ms is None:  # most steps: nothing to time out (two calls fewer)
        return _returned(front, att, retry, value, tx)
    return _came_to(front, att, retry, value, tx)


def _after(front: Frontier, att: Attempt, retry: Retry, task: Task) -> Any:
    """An overlapping attempt's coroutine ended (`task`): the attempt's end."""
    if isinstance(task.error, Exception):
        return _raised(front, att, retry, task.error)
    return _came_to(front, att, retry, task.value, None)


def _raised(front: Frontier, att: Attempt, retry: Retry, e: Exception) -> Any:
    """The attempt's function raised `e`: failed, or timed out if it ended past its
    timeout; a NonRetryable is not retried either way."""
    n, limit, db, now = att.n, retry.timeout_ms, front.db, att.started_at
    tb = tracebacks.of(e)
    if isinstance(e, NonRetryable):
        error = describe(e)
        if timeouts.overran(db, limit, now, e):
            return _ended(front, att, retry, TIMED_OUT, timeouts.message(n, limit, error),
                          traceback=tb)
        return _ended(front, att, retry, FAILED, error, traceback=tb)
    if not timeouts.overran(db, limit, now, e):
        return _ended(front, att, retry, FAILED, describe(e), e, tb)
    error = timeouts.message(n, limit, describe(e))
    return _ended(front, att, retry, TIMED_OUT, error, timeouts.exception(error, e), tb)


def _came_to(front: Frontier, att: Attempt, retry: Retry, value: Any,
             tx: Transaction | None) -> Any:
    """The attempt's function returned `value`: returned, or timed out past its timeout."""
    if timeouts.overran(front.db, retry.timeout_ms, att.started_at):
        if tx is not None:
            tx.rollback()
        error = timeouts.message(att.n, retry.timeout_ms)
        return _ended(front, att, retry, TIMED_OUT, error, timeouts.exception(error, None))
    return _returned(front, att, retry, value, tx)


def _mocked(front: Frontier, att: Attempt, retry: Retry, rule: Rule) -> Any:
    """End `att` as a test's `rule` says, its function not run: returned with the rule's
    value, failed with its error (retried as a raised one, unless non-retryable), or
    timed out as a real timeout ends it (`_run`)."""
    if rule.kind == mocks.RESULT:
        return _returned(front, att, retry, rule.value, None)
    if rule.kind == mocks.ERROR:
        exc = None if rule.non_retryable else mocks.MockedError(rule.value)
        return _ended(front, att, retry, FAILED, rule.value, exc)
    limit = retry.timeout_ms
    error = mocks.timed_out(att.n) if limit is None else timeouts.message(att.n, limit)
    return _ended(front, att, retry, TIMED_OUT, error, timeouts.exception(error, None))


def _ended(front: Frontier, att: Attempt, retry: Retry, outcome: str, error: str,
           exc: Exception | None = None, traceback: str | None = None) -> Any:
    """`att` failed (as `outcome`) with `error` (and the `traceback` of what it raised,
    if it raised): its end, then the next attempt after the backoff, or the final error
    if the attempts ran out or nothing is retried (`exc` None: a NonRetryable, a value
    that cannot be recorded)."""
    n, slot = att.n, att.slot
    now = att.end(outcome, error, traceback)
    if exc is None or n >= retry.attempts:
        return _give_up(front, att.pos, slot, error, n)
    why = policy.not_retried(retry, exc)
    if why is not None:
        return _give_up(front, att.pos, slot, f"{error} (not retried: {why})", n)
    try:
        wait = policy.wait_after(retry, n, att.context, exc)
    except policy.DelayFailed as e:
        return _give_up(front, att.pos, slot, policy.delay_failed(e, n, error), n)
    told.step_retried(front.db, front.journal.run_id, att.pos, slot.name, n, error,
                      now + wait)
    counted.retried(front.db, slot.name)
    return slot.retry_later(n, error, now + wait, now)


def _give_up(front: Frontier, pos: int, slot: Slot, error: str, attempts: int) -> Any:
    """The step (or branch) in `slot` failed for good: told, then recorded."""
    told.step_failed(front.db, front.journal.run_id, pos, slot.name, attempts, error)
    counted.settled(front.db, slot.name, attempts)
    return slot.give_up(error, attempts)


def _returned(front: Frontier, att: Attempt, retry: Retry, value: Any,
              tx: Transaction | None) -> Any:
    """`att` returned `value`: encoded (a value that cannot be recorded fails the step,
    not retried: the same code would most likely return the same kind of value), its
    end, then its record (a tx step's end and record inside its transaction)."""
    slot, text, tagged = att.slot, None, False
    if slot.records:
        try:
            text, tagged = encode(value, front.limit, f"the result of step {slot.name!r}")
        except (UnsupportedValue, ValueTooLarge) as e:
            if tx is not None:
                tx.rollback()
            return _ended(front, att, retry, FAILED, str(e))
    now = att.end(RETURNED, None)
    counted.settled(front.db, slot.name, att.n)
    return slot.returned(value, text, tagged, att.n, now, tx)


def step(front: Frontier, pos: int, name: str, fn: Callable[..., Any], retry: Retry,
         tables: Tables | None = None) -> Outcome:
    """One attempt of step `name` at new position `pos` (see `attempt`): its slot is its
    journal position (step_slot.py)."""
    front.open(pos)
    out: Outcome = attempt(front, pos, StepSlot(front, pos, name), fn, retry, tables)
    return out
