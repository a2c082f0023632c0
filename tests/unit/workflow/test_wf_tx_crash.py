"""A tx step cut at each of its statements, on the fake host: the event traps there (as
a kill -9 would end it: what was committed stays, the open transaction goes), and a
fresh runner goes on. At the cut the instance's own table holds a step's effect exactly
when the journal holds its result; in the end each effect is there once.

tests/e2e/test_workflow_tx.py does the same through `wkhost serve` with real kills."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from wkguest.workflow import Run
from wkguest.workflow.testing import FakeBackend, FakeHost, Trap

from .test_wf_tx import LEDGER, booking, ledger, records

ENTRIES = ("a", "b")

# The statements of a tx step, in order (tx.py), each cut before and after it runs; a
# skip of 1 cuts the second step's.
TAGS = ["wk:attempt", "wk:tx-begin", "wk:tx-tables", "app:effect", "wk:tx-check",
        "wk:result", "wk:tx-commit", "wk:finish"]
POINTS = [(f"sql-{when}:{tag}", skip) for tag in TAGS for when in ("before", "after")
          for skip in ((0,) if tag in ("wk:tx-tables", "wk:finish") else (0, 1))]


def cut_at(backend: FakeBackend, point: str, skip: int) -> Callable[[], bool]:
    """Make `backend` trap at `point` (its `skip`+1-th hit), once. Returns "did it"."""
    when, tag = point.removeprefix("sql-").split(":", 1)
    state = {"left": skip, "fired": False}

    def due(sql: str) -> bool:
        if state["fired"] or not sql.startswith(f"/*{tag}*/"):
            return False
        if state["left"]:
            state["left"] -= 1
            return False
        state["fired"] = True
        return True

    for method in ("exec", "exec_durable", "query_packed", "query_row"):
        setattr(backend, method, _cutting(getattr(backend, method), when, due))
    return lambda: bool(state["fired"])


def _cutting(op: Callable[..., Any], when: str, due: Callable[[str], bool]) -> Any:
    def call(sql: str, params: Any = ()) -> Any:
        if when == "before" and due(sql):
            raise Trap(f"cut before {sql[:30]}")
        out = op(sql, params)
        if when == "after" and due(sql):
            raise Trap(f"cut after {sql[:30]}")
        return out
    return call


def both_or_neither(backend: FakeBackend) -> None:
    booked, recorded = ledger(backend), records(backend)
    for e in ENTRIES:
        assert booked[e] == (recorded.get(f"book {e}") == "S"), (e, booked, recorded)


@pytest.mark.parametrize("point, skip", POINTS, ids=[f"{p}+{s}" for p, s in POINTS])
def test_a_cut_at_each_statement_leaves_the_effect_once_with_its_record(
        any_host: FakeHost, point: str, skip: int) -> None:
    calls: Counter[str] = Counter()

    def wf(run: Run, _: Any) -> Any:
        return [run.step(f"book {e}", booking(calls, e), tx=LEDGER) for e in ENTRIES]

    any_host.serve("w", wf)
    c = any_host.client("w")
    c.start("1")
    b = any_host.instance("w", "1").backend
    fired = cut_at(b, point, skip)
    any_host.run_due()
    assert fired() and any_host.traps == 1, point
    both_or_neither(b)

    any_host.advance(1000)  # the watchdog alarm brings the next run
    s = c.status("1")
    assert s.state == "completed" and s.output == [100, 200], s
    assert ledger(b) == {"a": 1, "b": 1}
    both_or_neither(b)
    assert sum(calls.values()) <= len(ENTRIES) + 1  # the cut step ran once more at most
