"""A step's attempts at its journal position: `step`, what a step came to (`Outcome`,
`StepResult`), and how each attempt ends.

One attempt per run, at most: it is counted before its function runs (so a trap inside it
counts, and the watchdog alarm brings the next), then run under the step's timeout
(timeouts.py), and it ends returned (its result recorded), failed (retried after its
backoff, policy.py) or given up (the step's final error). A tx step's attempt is one
transaction with its record (tx.py). A group's step branches take the same turns over
their branch rows (groups/turns.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import NonRetryable, Suspend, UnsupportedValue, ValueTooLarge
from . import policy, timeouts
from .attempt_history import COUNTED, FAILED, RETURNED, TIMED_OUT, was_cut
from .attempt_history import STEP as STEP_ONLY
from .config import Retry
from .context import StepContext
from .explain import describe
from .frontier import Frontier
from .kinds import STEP, STEP_FAILED, STEP_RETRYING, STEP_RETURNED, STEP_RETURNED_TAGGED
from .tx import Tables, Transaction
from .values import encode, revive

# Exact types, not subclasses: an IntEnum or a str subclass decodes as its base type.
_SCALARS = frozenset({str, int, float, bool, type(None)})

CUT = COUNTED  # the error an attempt is counted with: what it leaves if it never ends

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


def step(front: Frontier, pos: int, name: str, fn: Callable[..., Any], retry: Retry,
         tables: Tables | None = None) -> Outcome:
    """One attempt of step `name` at new position `pos` (or its final error, if the
    attempts ran out). `tables`: a tx step (tx.py), whose attempt is one transaction with
    its record; `fn` then takes the transaction's handle."""
    front.open(pos)
    p = front.pending_at(pos, STEP_RETRYING, STEP, name)
    attempts = p.attempts if p else 0
    cut = p is not None and attempts > 0 and was_cut(p.error, attempts)
    timed_out = timeouts.cut_message(p.error, attempts, retry.timeout_ms) if p else None
    if attempts >= retry.attempts:  # the last attempt was cut: no result will come
        if cut:
            front.attempts.cut(pos, timed_out=timed_out)
        return give_up(front, pos, name, timed_out or (p.error if p else None)
                       or CUT.format(n=attempts), attempts)
    now = front.db.now()
    if p and p.next_attempt_at is not None and now < p.next_attempt_at:
        # a backoff is pending: an early event waits too
        raise Suspend("running", p.next_attempt_at)
    if front.budget_spent(now):
        raise Suspend("running", now)  # the budget is spent: go on in a new event
    attempt = attempts + 1
    _count(front, pos, name, attempt, retry, now, cut, timed_out)
    tx = None if tables is None else Transaction(front.db, name, tables, front.journal.made)
    ctx = StepContext(name, attempt, pos, f"{front.journal.run_id}-{pos}",
                      timeouts.deadline(retry.timeout_ms, now), front.journal)
    return _attempt(front, pos, ctx, fn, retry, tx, now)


def _attempt(front: Frontier, pos: int, ctx: StepContext, fn: Callable[..., Any],
             retry: Retry, tx: Transaction | None, now: int) -> Outcome:
    """Run the attempt counted at `now`, and record how it ended."""
    name, attempt, limit, db = ctx.name, ctx.attempt, retry.timeout_ms, front.db
    front.context = ctx
    try:
        # A tx attempt's exception has rolled its writes back before it gets here.
        value = timeouts.call(db, fn if tx is None else lambda: tx.run(fn), limit)
    except NonRetryable as e:
        error = describe(e)
        if timeouts.overran(db, limit, now, e):
            return give_up(front, pos, name, timeouts.message(attempt, limit, error),
                           attempt, TIMED_OUT)
        return give_up(front, pos, name, error, attempt)
    except Exception as e:
        if not timeouts.overran(db, limit, now, e):
            return _failed(front, pos, ctx, describe(e), retry, e)
        error = timeouts.message(attempt, limit, describe(e))
        return _failed(front, pos, ctx, error, retry, timeouts.exception(error, e), TIMED_OUT)
    finally:
        front.context = None
    if timeouts.overran(db, limit, now):
        if tx is not None:
            tx.rollback()
        error = timeouts.message(attempt, limit)
        return _failed(front, pos, ctx, error, retry, timeouts.exception(error, None),
                       TIMED_OUT)
    return _returned(front, pos, name, value, attempt, tx)


def _count(front: Frontier, pos: int, name: str, attempt: int, retry: Retry, now: int,
           cut: bool, timed_out: str | None = None) -> None:
    """Count attempt `attempt` before its function runs, with the error it leaves if it
    never returns: a trap inside the function then counts, and the watchdog alarm brings
    the next attempt. `cut`: the attempt before it never ended; its history row is copied
    from the step's row first (attempt_history.py), as timed out if it was cut at its
    narrowed deadline (`timed_out`: its error)."""
    retry_at = now + retry.backoff(attempt)
    front.watch(retry_at, now)
    if cut:
        front.attempts.cut(pos, timed_out=timed_out)
    front.store.count_attempt(pos, name, attempt, CUT.format(n=attempt), retry_at, now)
    front.pending = None
    front.begin_attempt(pos, STEP_ONLY, attempt, now)


def _returned(front: Frontier, pos: int, name: str, value: Any, attempt: int,
              tx: Transaction | None) -> Outcome:
    try:
        text, tagged = encode(value, front.limit, f"the result of step {name!r}")
    except (UnsupportedValue, ValueTooLarge) as e:
        # Not retried: the same code would most likely return the same kind of value.
        if tx is not None:
            tx.rollback()
        return give_up(front, pos, name, str(e), attempt)
    kind = STEP_RETURNED_TAGGED if tagged else STEP_RETURNED
    store = front.store
    now = front.db.now()
    front.end_attempt(RETURNED, None, now)  # a tx step's: inside its transaction
    if tx is None:
        store.put_final(pos, kind, name, text, now, durable=False)
    else:  # the result inside the attempt's transaction, then its COMMIT
        tx.commit(lambda: store.put_final(pos, kind, name, text, now, durable=False))
    front.unsynced = True
    # A plain scalar comes back from its JSON as itself: decoding it again (slow for a
    # big str in a guest) would only make an equal copy.
    raw = value if not tagged and type(value) in _SCALARS else json.loads(text)
    front.journal.append(kind, name, text, raw)
    # attempts 0: a replay cannot tell how many attempts a success took, so no run can
    return True, (revive(raw) if tagged else raw), None, 0


def _failed(front: Frontier, pos: int, ctx: StepContext, error: str, retry: Retry,
            exc: Exception, outcome: str = FAILED) -> Outcome:
    name, attempt = ctx.name, ctx.attempt
    front.end_attempt(outcome, error)
    if attempt >= retry.attempts:
        return give_up(front, pos, name, error, attempt)
    try:
        wait = policy.wait_after(retry, attempt, ctx, exc)
    except policy.DelayFailed as e:
        return give_up(front, pos, name, policy.delay_failed(e, attempt, error), attempt)
    now = front.db.now()
    retry_at = now + wait
    front.store.retry_later(pos, error, retry_at, now)
    raise Suspend("running", retry_at)


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
