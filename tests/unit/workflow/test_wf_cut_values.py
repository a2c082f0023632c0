"""Whether an attempt was cut is a value (format version 6's `cut` column), noted once for
a step and for a group's branch (core/cuts.py) from the host's record
(`Backend.last_trap_info`): a narrowed deadline is told by its kind, not its words; an
exception the guest reported is named on the attempt; and an instance that version 5
wrote (the cut only in its rows' error texts) is migrated once and runs on as before."""

from __future__ import annotations

from typing import Any

import pytest
from wkguest.reasons import NARROWED_REASON
from wkguest.workflow import Run, Step
from wkguest.workflow.backend import TRAP_GUEST, TRAP_NARROWED_DEADLINE, LastTrap
from wkguest.workflow.core.kinds import COUNTED
from wkguest.workflow.core.store import Store
from wkguest.workflow.groups import rows
from wkguest.workflow.testing import FakeBackend, FakeHost, Trap

from .conftest import Raw
from .test_storage_format import _normal, ddl_statements

UNREACHABLE = "guest trapped: wasm trap: wasm `unreachable` instruction executed"
RAISED = LastTrap(TRAP_GUEST, UNREACHABLE, ("ValueError", "bad\n  input", "Traceback ..."))


def history(host: FakeHost) -> list[tuple[Any, ...]]:
    """Position 0's attempts: (branch, attempt, outcome, error), oldest first."""
    status, out = Raw(host, "w")("1", "steps", {"attempts": True})
    assert status == 200, out
    return [(a["branch"], a["attempt"], a["outcome"], a["error"])
            for a in out["steps"][0]["history"]]


def traps_once(then: Any = 5) -> Any:
    runs: list[int] = []

    def f() -> Any:
        runs.append(1)
        if len(runs) == 1:
            raise Trap("the first attempt traps")
        return then
    return f


def step_row(b: FakeBackend) -> tuple[Any, ...]:
    return b.rows("SELECT error, cut FROM _wk_wf_step WHERE pos = 0")[0]


def cut_once(host: FakeHost, wf: Any, trap: LastTrap | None) -> FakeBackend:
    """Serve `wf`, run its first event (whose attempt traps), and make the host's record
    of that cut `trap` (None: the host kept none, as after a kill)."""
    host.serve("w", wf)
    host.client("w").start("1")
    host.run_due()
    b = host.instance("w", "1").backend
    assert b.trap_info is not None
    b.trap_info = trap
    return b


def test_a_cut_the_guest_reported_names_its_exception(any_host: FakeHost) -> None:
    f = traps_once()
    b = cut_once(any_host, lambda wf, _: wf.step("s", f, backoff_ms=100), RAISED)
    assert step_row(b) == (COUNTED.format(n=1), "open")
    status = any_host.client("w").status("1")  # the first event after the cut notes it
    assert status.error == f"its last event was cut: {UNREACHABLE}"
    assert step_row(b) == ("attempt 1 was cut: the guest raised ValueError: bad input",
                           TRAP_GUEST)
    any_host.advance(100)
    assert any_host.client("w").status("1").output == 5
    assert history(any_host) == [(None, 1, "cut", "the guest raised ValueError: bad input"),
                                 (None, 2, "returned", None)]


def test_a_branch_cut_is_noted_by_the_same_routine(any_host: FakeHost) -> None:
    f = traps_once()

    def wf(run: Run, _: Any) -> Any:
        return run.all([Step("b", f, backoff_ms=100)])

    cut_once(any_host, wf, RAISED)
    any_host.advance(100)
    assert any_host.client("w").status("1").output == [5]
    assert history(any_host) == [(0, 1, "cut", "the guest raised ValueError: bad input"),
                                 (0, 2, "returned", None)]


def test_the_last_attempt_cut_fails_the_step_naming_the_exception(any_host: FakeHost
                                                                  ) -> None:
    def f() -> None:
        raise Trap("every attempt traps")

    def wf(run: Run, _: Any) -> Any:
        return run.try_step("s", f, attempts=1).error

    cut_once(any_host, wf, RAISED)
    any_host.advance(1000)
    assert any_host.client("w").status("1").output == (
        "attempt 1 was cut: the guest raised ValueError: bad input")


@pytest.mark.parametrize("trap, outcome, error", [
    (LastTrap(TRAP_NARROWED_DEADLINE, "cut at its own deadline"), "timed-out",
     "timed out: attempt 1 passed its timeout of 10 seconds (cut at its own deadline)"),
    (LastTrap(TRAP_GUEST, NARROWED_REASON), "cut", NARROWED_REASON),
], ids=["narrowed-kind-other-words", "guest-kind-narrowed-words"])
def test_a_timed_out_cut_is_told_by_its_kind_not_its_words(
        any_host: FakeHost, trap: LastTrap, outcome: str, error: str) -> None:
    f = traps_once()
    cut_once(any_host, lambda wf, _: wf.step("s", f, timeout="10 seconds", backoff_ms=100),
             trap)
    any_host.advance(100)
    assert any_host.client("w").status("1").output == 5
    assert history(any_host) == [(None, 1, outcome, error), (None, 2, "returned", None)]


def test_a_cut_no_one_explained_stays_a_cut_with_its_count(any_host: FakeHost) -> None:
    f = traps_once()
    cut_once(any_host, lambda wf, _: wf.step("s", f, backoff_ms=100), None)
    assert history(any_host) == [(None, 1, "cut", COUNTED.format(n=1))]  # from its row
    any_host.advance(100)
    assert history(any_host) == [(None, 1, "cut", COUNTED.format(n=1)),
                                 (None, 2, "returned", None)]


# -- an instance that format version 5 wrote ------------------------------------------

def as_version_5(b: FakeBackend, *updates: str) -> None:
    """Make `b`'s tables as version 5 made them (no `cut` column), then run `updates`
    (the texts version 5 would have written)."""
    for table in ("_wk_wf_step", "_wk_wf_branch"):
        if b.rows("SELECT 1 FROM sqlite_master WHERE name = ?", (table,)):
            b.conn.execute(f"ALTER TABLE {table} DROP COLUMN cut")
    for sql in updates:
        b.conn.execute(sql)


@pytest.fixture
def fresh() -> FakeHost:
    """A runner for every event: each finds the tables as the last one left them."""
    return FakeHost(always_replay=True)


def test_a_version_5_open_attempt_is_migrated_as_cut(fresh: FakeHost) -> None:
    f = traps_once()
    b = cut_once(fresh, lambda wf, _: wf.step("s", f, backoff_ms=100), None)
    as_version_5(b)
    fresh.advance(100)
    assert fresh.client("w").status("1").output == 5
    assert history(fresh) == [(None, 1, "cut", COUNTED.format(n=1)),
                              (None, 2, "returned", None)]
    assert b.rows("SELECT cut FROM _wk_wf_step") == [(None,)]  # the column, once


def test_a_version_5_cut_at_the_narrowed_deadline_is_migrated_timed_out(fresh: FakeHost
                                                                        ) -> None:
    f = traps_once()
    b = cut_once(fresh, lambda wf, _: wf.step("s", f, timeout="10 seconds", backoff_ms=100),
                 None)
    as_version_5(b, "UPDATE _wk_wf_step SET error = 'attempt 1 was cut: "
                    f"{NARROWED_REASON}'")  # version 5's note of the host's reason
    assert history(fresh) == [(None, 1, "timed-out", NARROWED_REASON)]
    fresh.advance(100)
    assert history(fresh) == [
        (None, 1, "timed-out",
         f"timed out: attempt 1 passed its timeout of 10 seconds ({NARROWED_REASON})"),
        (None, 2, "returned", None)]


def test_a_version_5_branch_cut_is_noted_from_the_instance_error(fresh: FakeHost) -> None:
    f = traps_once()

    def wf(run: Run, _: Any) -> Any:
        return run.all([Step("a", lambda: 1), Step("b", f, backoff_ms=100)])

    b = cut_once(fresh, wf, None)
    as_version_5(b, "UPDATE _wk_wf SET error = 'its last event was cut: guest trapped: x'")
    fresh.advance(100)
    assert fresh.client("w").status("1").output == [1, 5]
    assert history(fresh) == [(0, 1, "returned", None), (1, 1, "cut", "guest trapped: x"),
                              (1, 2, "returned", None)]


def test_version_6s_tables_are_the_pages_with_the_column_made_or_migrated() -> None:
    """docs/storage-format.md gives version 5's DDL and the column version 6 adds: a new
    instance's tables and a migrated one's are both that DDL with `cut TEXT` after its
    last column."""
    made, old = FakeBackend(), FakeBackend()
    for b in (made, old):
        Store(b).init_schema()
        b.conn.execute(rows.TABLE)
    as_version_5(old)
    Store(old).migrate()
    for table in ("_wk_wf_step", "_wk_wf_branch"):
        (page,) = [d for d in ddl_statements() if f"EXISTS {table} (" in d]
        want = _normal(page).replace("updated_at INTEGER NOT NULL",
                                     "updated_at INTEGER NOT NULL, cut TEXT")
        for b in (made, old):
            (sql,) = b.rows("SELECT sql FROM sqlite_master WHERE name = ?", (table,))[0]
            assert _normal(sql) == want, table
