"""An attempt is an object (core/under_way.py): the Frontier holds every attempt in flight,
each with its own slot, start, meter, deadline and context, and each ends once, on its
own, in any order (as Workflows IV will overlap a group's branches). Runs today keep one
at a time; these drive the Frontier directly."""

from __future__ import annotations

from typing import Any

from wkguest.workflow.core.attempt_history import FAILED, RETURNED
from wkguest.workflow.core.frontier import Frontier
from wkguest.workflow.core.journal import Journal
from wkguest.workflow.core.store import Store
from wkguest.workflow.testing import FakeBackend


class Slot:
    """Just what an Attempt reads of its slot."""

    records = True
    carries = False  # its end is not followed by a Store write here

    def __init__(self, name: str, idx: int) -> None:
        self.name, self.idx, self.key = name, idx, f"key-{idx}"


def frontier() -> tuple[FakeBackend, Frontier]:
    b = FakeBackend()
    store = Store(b)
    store.init_schema()
    front = Frontier(store, b, Journal("r1", "null", False), None, 1 << 20, 10_000,
                     b.now())
    return b, front


def rows(b: FakeBackend) -> list[tuple[Any, ...]]:
    return b.rows("SELECT pos, idx, attempt, started_at, ended_at, outcome, error, fuel"
                  " FROM _wk_wf_attempt ORDER BY idx")


def test_two_attempts_in_flight_end_each_on_its_own() -> None:
    b, front = frontier()
    t0 = b.now()
    first = front.begin_attempt(Slot("a", 0), 3, 1, t0, 5000)  # type: ignore[arg-type]
    b.fuel += 700
    b.clock.jump(10)
    second = front.begin_attempt(Slot("b", 1), 3, 2, t0 + 10, None)  # type: ignore[arg-type]
    assert front.in_flight == [first, second] and front.new_steps == 2
    assert (first.deadline, second.deadline) == (t0 + 5000, None)
    assert (first.context.name, first.context.attempt, second.context.key) == ("a", 1, "key-1")
    b.clock.jump(5)
    b.fuel += 300
    second.end(RETURNED, None)
    assert front.in_flight == [first]
    b.clock.jump(5)
    first.end(FAILED, "ValueError: no")
    first.end(RETURNED, None)  # once: a second end records nothing
    assert front.in_flight == []
    assert rows(b) == [(3, 0, 1, t0, t0 + 20, FAILED, "ValueError: no", 1000),
                       (3, 1, 2, t0 + 10, t0 + 15, RETURNED, None, 300)]


def test_the_context_is_the_running_attempts() -> None:
    _, front = frontier()
    att = front.begin_attempt(Slot("a", -1), 0, 1, 0, None)  # type: ignore[arg-type]
    assert front.context is None  # counted, its function not yet running
    front.running = att
    assert front.context is att.context
