"""An attempt under way, as an object: what the one attempt machine (attempt.py) makes
when it counts an attempt, and ends once, when the attempt returned or failed.

An `Attempt` is its slot (a journal position or a group's branch row: `Slot`, where its
count and its end go), its position and number, its start, its deadline (the step's
timeout from its start) and meter (the fuel and memory then), and the context its
function gets. The Frontier keeps the attempts in flight, none of which is "the" attempt:
today a run has at most one at a time, and Workflows IV may hold a group's branches
waiting together. `end` is the one place an attempt's end is recorded (its history row,
attempt_history.py); an attempt that never ends (a trap, a kill) is told by its slot's
row instead (its `cut`, kinds.py).
"""

from __future__ import annotations

from typing import Any, Protocol

from . import counted, spans, timeouts
from .attempt_history import Attempts, Meter
from .context import StepContext
from .journal import Journal
from .tx import Transaction


class Slot(Protocol):
    """Where a step's attempts are counted and what they came to recorded."""

    name: str
    idx: int  # its attempts' history idx: attempt_history.STEP for a step, a branch's index
    key: str  # its idempotency key, as its StepContext gives it
    records: bool  # whether a returned attempt's value is recorded (so encoded first)
    # Whether what follows an attempt's end is a write through the Store (the step's
    # record, its retry, its final error), which carries the attempt's history row.
    carries: bool
    # The group's Overlap (overlapping.py) that drives its coroutine, for a group's step
    # branch; None: an async function's coroutine runs to its end inside its attempt.
    overlap: Any

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

    def returned(self, value: Any, text: str | None, tagged: bool, attempt: int, now: int,
                 tx: Transaction | None) -> Any:
        """`attempt` returned `value`, encoded as `text` (None if not `records`), at
        `now` (`tx`: its transaction, still open: the slot commits it with the record)."""

    def give_up(self, error: str, attempts: int) -> Any:
        """The step failed for good with `error` after `attempts`."""


class Attempt:
    """Attempt `n` of the step in `slot` at position `pos`, counted at `started_at`."""

    __slots__ = ("slot", "pos", "n", "started_at", "deadline", "context", "_meter",
                 "_history", "_in_flight", "_span")

    def __init__(self, slot: Slot, pos: int, n: int, started_at: int, timeout_ms: int | None,
                 journal: Journal, history: Attempts, in_flight: list[Attempt]) -> None:
        self.slot, self.pos, self.n, self.started_at = slot, pos, n, started_at
        self.deadline = timeouts.deadline(timeout_ms, started_at)
        self.context = StepContext(slot.name, n, pos, slot.key, self.deadline, journal)
        self._history, self._in_flight = history, in_flight
        self._meter: Meter | None = history.begin(pos, slot.idx, n, started_at)
        self._span = spans.begin(history.store, journal.run_id, slot.name, pos, slot.idx, n)
        in_flight.append(self)

    def end(self, outcome: str, error: str | None, traceback: str | None = None) -> int:
        """It ended now as `outcome` (attempt_history's RETURNED, FAILED, TIMED_OUT) with
        `error`, and the `traceback` of what it raised: its history row, once. Returns
        the host's clock at its end."""
        m, self._meter = self._meter, None
        if m is None:
            return self._history.db.now()
        self._in_flight.remove(self)
        now = self._history.end(m, outcome, error, self.slot.carries, traceback)
        counted.attempt_ended(self._history.db, self.slot.name, now - self.started_at)
        if self._span:
            spans.end(self._history.db, self._span, outcome, self._history.fuel_since(m),
                      error, traceback)
        return now
