"""A group's step branch's attempts (and a child branch's start): as core/attempt.py makes
a step's, with its retries, its backoff, its timeout, the watchdog and the event's budget,
over the branch's row (rows.py) instead of a journal position. A branch that cannot be
attempted yet (a backoff, the budget spent) tells the group when to look again (`later`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ..core import policy, timeouts
from ..core.attempt import CUT
from ..core.attempt_history import FAILED, RETURNED, TIMED_OUT, was_cut
from ..core.config import Retry
from ..core.context import StepContext
from ..core.explain import describe
from ..core.frontier import Frontier
from ..core.kinds import STEP_FAILED, STEP_RETRYING, STEP_RETURNED, STEP_RETURNED_TAGGED
from ..core.values import encode
from ..errors import NonRetryable, UnsupportedValue, ValueTooLarge
from .branches import Checked
from .rows import Branches, Row

Outcome = list[Any]  # [kind, result]: a settled branch, as the group's entry records it
Later = Callable[..., None]  # later(at, running=..., waiting=...): when to look again


class BranchAttempts:
    """The attempts of the step branches of the group at `pos`, in one run."""

    def __init__(self, front: Frontier, rows: Branches, pos: int, key: Callable[[int], str],
                 later: Later) -> None:
        self.front = front
        self.db = front.db
        self.rows = rows
        self.pos = pos
        self.key = key  # a branch's idempotency key, by index
        self.later = later
        self.budget_spent = False

    def attempt(self, i: int, c: Checked, row: Row | None, fn: Callable[[], Any],
                 done: Callable[[int, str, Any, int], Outcome | None]) -> Outcome | None:
        """One attempt of a step branch (or of a child's start), as core/attempt.py makes
        a step's: with its retries, its backoff, its timeout, the watchdog and the
        event's budget."""
        front, retry = self.front, c.retry
        assert retry is not None
        attempts = row.attempts if row else 0
        cut = row is not None and attempts > 0 and was_cut(row.error, attempts)
        late = timeouts.cut_message(row.error, attempts, retry.timeout_ms) if row else None
        if attempts >= retry.attempts:  # the last attempt was cut
            if cut:
                front.attempts.cut(self.pos, i, timed_out=late)
            return self.failed(i, c.name, late or (row.error if row else None)
                                or CUT.format(n=attempts), attempts)
        now = self.db.now()
        if row is not None and row.next_attempt_at is not None and now < row.next_attempt_at:
            self.later(row.next_attempt_at, running=True)
            return None
        if self.budget_spent or front.budget_spent(now):
            self.budget_spent = True
            self.later(now, running=True)
            return None
        attempt = attempts + 1
        self._count(i, c, retry, attempt, now, late if cut else None, cut)
        ctx = StepContext(c.name, attempt, self.pos, self.key(i),
                          timeouts.deadline(retry.timeout_ms, now), front.journal)
        return self._run(i, c, ctx, fn, done, now)

    def _count(self, i: int, c: Checked, retry: Retry, attempt: int, now: int,
               late: str | None, cut: bool) -> None:
        front = self.front
        retry_at = now + retry.backoff(attempt)
        front.watch(retry_at, now)
        if cut:  # its history row, from the branch's row before the count writes over it
            front.attempts.cut(self.pos, i, timed_out=late)
        self.rows.count_attempt(i, c.name, attempt, CUT.format(n=attempt), retry_at, now)
        front.unsynced = True
        front.begin_attempt(self.pos, i, attempt, now)

    def _run(self, i: int, c: Checked, ctx: StepContext, fn: Callable[[], Any],
             done: Callable[[int, str, Any, int], Outcome | None], now: int
             ) -> Outcome | None:
        limit = None if c.retry is None else c.retry.timeout_ms
        self.front.context = ctx
        try:
            value = timeouts.call(self.db, fn, limit)
        except NonRetryable as e:
            late = timeouts.overran(self.db, limit, now, e)
            error = timeouts.message(ctx.attempt, limit, describe(e)) if late else describe(e)
            return self.failed(i, c.name, error, ctx.attempt, TIMED_OUT if late else FAILED)
        except Exception as e:
            if not timeouts.overran(self.db, limit, now, e):
                return self._retry_later(i, c, ctx, describe(e), e)
            error = timeouts.message(ctx.attempt, limit, describe(e))
            return self._retry_later(i, c, ctx, error, timeouts.exception(error, e), TIMED_OUT)
        finally:
            self.front.context = None
        if timeouts.overran(self.db, limit, now):
            error = timeouts.message(ctx.attempt, limit)
            return self._retry_later(i, c, ctx, error, timeouts.exception(error, None), TIMED_OUT)
        return done(i, c.name, value, ctx.attempt)

    def _retry_later(self, i: int, c: Checked, ctx: StepContext, error: str, exc: Exception,
                     outcome: str = FAILED) -> Outcome | None:
        self.front.end_attempt(outcome, error)
        retry, attempt = c.retry, ctx.attempt
        assert retry is not None
        if attempt >= retry.attempts:
            return self.failed(i, c.name, error, attempt)
        try:
            wait = policy.wait_after(retry, attempt, ctx, exc)
        except policy.DelayFailed as e:
            return self.failed(i, c.name, policy.delay_failed(e, attempt, error), attempt)
        now = self.db.now()
        at = now + wait
        self.rows.put(i, STEP_RETRYING, c.name, now, attempts=attempt, error=error,
                      next_attempt_at=at)
        self.later(at, running=True)
        return None

    def returned(self, i: int, name: str, value: Any, attempt: int) -> Outcome:
        try:
            text, tagged = encode(value, self.front.limit, f"the result of step {name!r}")
        except (UnsupportedValue, ValueTooLarge) as e:
            return self.failed(i, name, str(e), attempt)
        kind = STEP_RETURNED_TAGGED if tagged else STEP_RETURNED
        self.front.end_attempt(RETURNED, None)
        self.rows.put(i, kind, name, self.db.now(), result=text, attempts=attempt)
        return [kind, json.loads(text)]

    def failed(self, i: int, name: str, error: str, attempts: int,
                outcome: str = FAILED) -> Outcome:
        self.front.end_attempt(outcome, error)
        text = json.dumps([error, attempts], ensure_ascii=False, separators=(",", ":"))
        self.rows.put(i, STEP_FAILED, name, self.db.now(), result=text, attempts=attempts,
                      error=error)
        return [STEP_FAILED, [error, attempts]]
