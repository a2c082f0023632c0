"""A group's branch as the slot of the one attempt machine (core/attempt.py): a step
branch's attempts (and a child branch's start) are counted and recorded in the branch's
row (rows.py) instead of a journal position. An attempt not due yet (a backoff, the
event's budget spent) does not stop the run: it tells the group when to look again
(`later`), and the other branches take their turns.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ..core.frontier import Frontier
from ..core.kinds import STEP_FAILED, STEP_RETRYING, STEP_RETURNED, STEP_RETURNED_TAGGED
from ..core.overlapping import Overlap
from ..core.tx import Transaction
from .rows import BranchRows, Row

Outcome = list[Any]  # [kind, result]: a settled branch, as the group's entry records it
Later = Callable[..., None]  # later(at, running=..., waiting=...): when to look again


class Budget:
    """Whether the event's budget of new attempts is spent, for every branch of a group's
    turn: once one branch finds it spent, the others wait too."""

    __slots__ = ("front", "spent")

    def __init__(self, front: Frontier) -> None:
        self.front = front
        self.spent = False

    def check(self, now: int) -> bool:
        self.spent = self.spent or self.front.budget_spent(now)
        return self.spent


class BranchSlot:
    """Branch `idx` of the group whose rows are `rows`: its attempts' slot."""

    __slots__ = ("front", "rows", "row", "idx", "name", "key", "later", "budget", "done",
                 "records", "overlap")
    carries = False  # its writes are its group's rows' (rows.py), not the Store's

    def __init__(self, front: Frontier, rows: BranchRows, row: Row | None, idx: int,
                 name: str, key: str, later: Later, budget: Budget, overlap: Overlap,
                 done: Callable[[Any, int], Outcome | None] | None = None) -> None:
        self.front, self.rows, self.row = front, rows, row
        self.idx, self.name, self.key = idx, name, key
        self.later, self.budget = later, budget
        self.overlap = overlap  # the group's: it drives an async branch's coroutine
        # what a returned attempt does: record the step branch's value (a child branch's
        # start waits for its notice instead)
        self.done = done
        self.records = done is None

    def prior(self) -> tuple[int, str | None, int | None, str | None]:
        r = self.row
        if r is None:
            return 0, None, None, None
        return r.attempts, r.error, r.next_attempt_at, r.cut

    def budget_spent(self, now: int) -> bool:
        return self.budget.check(now)

    def not_yet(self, at: int) -> None:
        self.later(at, running=True)

    def count(self, attempt: int, error: str, retry_at: int, now: int) -> None:
        self.rows.count_attempt(self.idx, self.name, attempt, error, retry_at, now)
        self.front.unsynced = True

    def retry_later(self, attempt: int, error: str, at: int, now: int) -> None:
        self.rows.put(self.idx, STEP_RETRYING, self.name, now, attempts=attempt, error=error,
                      next_attempt_at=at)
        self.later(at, running=True)

    def returned(self, value: Any, text: str | None, tagged: bool, attempt: int, now: int,
                 tx: Transaction | None) -> Outcome | None:
        if self.done is not None:
            return self.done(value, attempt)
        assert text is not None  # a step branch's value is recorded
        kind = STEP_RETURNED_TAGGED if tagged else STEP_RETURNED
        self.rows.put(self.idx, kind, self.name, now, result=text, attempts=attempt)
        return [kind, json.loads(text)]

    def give_up(self, error: str, attempts: int) -> Outcome:
        text = json.dumps([error, attempts], ensure_ascii=False, separators=(",", ":"))
        self.rows.put(self.idx, STEP_FAILED, self.name, self.front.db.now(), result=text,
                      attempts=attempts, error=error)
        return [STEP_FAILED, [error, attempts]]
