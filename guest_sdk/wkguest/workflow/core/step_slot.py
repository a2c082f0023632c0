"""A step's own slot for the one attempt machine (attempt.py): its journal position.
Its pending entry counts the attempts, and its end is the position's final entry."""

from __future__ import annotations

import json
from typing import Any

from ..errors import Suspend
from .attempt_history import STEP as STEP_ONLY
from .frontier import Frontier
from .kinds import STEP, STEP_FAILED, STEP_RETRYING, STEP_RETURNED, STEP_RETURNED_TAGGED
from .tx import Transaction
from .values import revive

# (ok, value, error, attempts): what a step came to
Outcome = tuple[bool, Any, str | None, int]

# Exact types, not subclasses: an IntEnum or a str subclass decodes as its base type.
_SCALARS = frozenset({str, int, float, bool, type(None)})


class StepSlot:
    """A step's journal position: its pending entry counts the attempts, and its end is
    the position's final entry. An attempt not due yet stops the run (Suspend)."""

    __slots__ = ("front", "pos", "name", "idx", "key", "pending")
    overlap = None  # an async step's coroutine runs to its end inside its attempt
    records = True
    carries = True  # its record, retry and final error are the Store's writes

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

    def returned(self, value: Any, text: str | None, tagged: bool, attempt: int, now: int,
                 tx: Transaction | None) -> Outcome:
        front, pos, name, store = self.front, self.pos, self.name, self.front.store
        assert text is not None  # a step's value is recorded
        kind = STEP_RETURNED_TAGGED if tagged else STEP_RETURNED
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

    def give_up(self, error: str, attempts: int) -> Outcome:
        """The step failed for good with `error` after `attempts`: recorded."""
        front, pos, name = self.front, self.pos, self.name
        text = json.dumps([error, attempts], ensure_ascii=False, separators=(",", ":"))
        front.store.put_final(pos, STEP_FAILED, name, text, front.db.now(), error=error,
                              durable=False)
        front.unsynced = True
        front.journal.append(STEP_FAILED, name, text, [error, attempts])
        front.pending = None
        return False, None, error, attempts
