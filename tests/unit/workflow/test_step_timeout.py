"""A step's timeout per attempt: the deadline narrowed around the attempt's function, an
attempt that ends past it recorded as timed out and retried (a tx step's writes rolled
back), an attempt the host cut at that deadline recorded as timed out too, and no host
call at all for a step without a timeout.

FakeBackend records narrow_deadline's arguments (`deadlines`) and cannot cut Python
code: a test moves the fake clock inside the function to make an attempt late."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest
import wkguest
from wkguest.errors import CallError, FetchError, SqliteError
from wkguest.reasons import NARROWED_REASON
from wkguest.workflow import NonRetryable, Run, Step, StepContext, Tables, TxDb
from wkguest.workflow.backend import TRAP_NARROWED_DEADLINE, CallFailed, LastTrap
from wkguest.workflow.errors import StoreFault
from wkguest.workflow.testing import FakeHost, Trap

from .conftest import Raw

# What the host keeps of an event it cut at the deadline the event narrowed itself.
NARROWED_CUT = LastTrap(TRAP_NARROWED_DEADLINE, NARROWED_REASON)

LEDGER = Tables("CREATE TABLE IF NOT EXISTS ledger (n INTEGER NOT NULL)")


def history(host: FakeHost, id: str = "1") -> list[tuple[Any, ...]]:
    """Position 0's attempts: (attempt, outcome, error), oldest first."""
    status, out = Raw(host, "w")(id, "steps", {"attempts": True})
    assert status == 200, out
    return [(a["attempt"], a["outcome"], a["error"]) for a in out["steps"][0]["history"]]


def slow_first(host: FakeHost, runs: list[int], late_ms: int, raises: BaseException | None = None
               ) -> Any:
    """A step function whose first call takes `late_ms` of host clock (then raises
    `raises`, if given); the later ones return at once."""
    def f() -> Any:
        runs.append(host.clock.now())
        if len(runs) == 1:
            host.clock.jump(late_ms)
            if raises is not None:
                raise raises
        return len(runs)
    return f


def test_a_late_attempt_is_timed_out_and_retried(any_host: FakeHost) -> None:
    runs: list[int] = []
    any_host.serve("w", lambda wf, _: wf.step("s", slow_first(any_host, runs, 1500),
                                              timeout="1 second", delay=100))
    c = any_host.client("w")
    c.start("1")
    any_host.run_due()
    any_host.advance(100)
    assert c.status("1").output == 2  # the first attempt's value was discarded
    assert history(any_host) == [
        (1, "timed-out", "timed out: attempt 1 passed its timeout of 1 second"),
        (2, "returned", None),
    ]
    b = any_host.instance("w", "1").backend
    assert b.deadlines == [1000, None, 1000, None]


def test_an_attempt_ending_right_at_the_timeout_is_timed_out(any_host: FakeHost) -> None:
    runs: list[int] = []
    any_host.serve("w", lambda wf, _: wf.step("s", slow_first(any_host, runs, 1000),
                                              timeout_ms=1000, delay=10))
    any_host.client("w").start("1")
    any_host.run_due()
    any_host.advance(10)
    assert [h[1] for h in history(any_host)] == ["timed-out", "returned"]


def test_an_attempt_inside_its_timeout_is_not(any_host: FakeHost) -> None:
    runs: list[int] = []
    any_host.serve("w", lambda wf, _: wf.step("s", slow_first(any_host, runs, 999),
                                              timeout_ms=1000))
    c = any_host.client("w")
    c.start("1")
    any_host.run_due()
    assert c.status("1").output == 1
    assert [h[1] for h in history(any_host)] == ["returned"]


def test_a_late_attempt_that_raised_says_both(any_host: FakeHost) -> None:
    runs: list[int] = []
    seen: list[Any] = []

    def delay(ctx: StepContext, error: Exception) -> int:
        seen.append((type(error).__name__, type(error.__cause__).__name__))
        return 10

    any_host.serve("w", lambda wf, _: wf.step(
        "s", slow_first(any_host, runs, 5000, RuntimeError("socket closed")),
        timeout="2s", delay=delay))
    any_host.client("w").start("1")
    any_host.run_due()
    any_host.advance(10)
    assert history(any_host)[0] == (
        1, "timed-out",
        "timed out: attempt 1 passed its timeout of 2 seconds (RuntimeError: socket closed)")
    assert seen == [("StepTimedOut", "RuntimeError")]


def test_a_late_non_retryable_still_fails_the_step_for_good(any_host: FakeHost) -> None:
    runs: list[int] = []

    def wf(run: Run, _: Any) -> Any:
        r = run.try_step("s", slow_first(any_host, runs, 5000, NonRetryable("rejected")),
                         timeout="1s", attempts=5)
        return [r.attempts, r.error]

    any_host.serve("w", wf)
    c = any_host.client("w")
    c.start("1")
    any_host.run_due()
    assert c.status("1").output == [1, "timed out: attempt 1 passed its timeout of 1 second "
                                       "(rejected)"]
    assert len(runs) == 1


def test_the_last_attempt_timed_out_fails_the_step(any_host: FakeHost) -> None:
    def f() -> int:
        any_host.clock.jump(2000)
        return 1

    def wf(run: Run, _: Any) -> Any:
        return run.try_step("s", f, timeout="1s", limit=1, delay=10).error

    any_host.serve("w", wf)
    c = any_host.client("w")
    c.start("1")
    any_host.run_due()
    any_host.advance(10)
    assert c.status("1").output == "timed out: attempt 2 passed its timeout of 1 second"
    assert [h[1] for h in history(any_host)] == ["timed-out", "timed-out"]


def test_a_late_tx_attempt_rolls_its_writes_back(any_host: FakeHost) -> None:
    calls: list[int] = []

    def book(db: TxDb) -> Any:
        calls.append(1)
        db.exec("/*app:book*/ INSERT INTO ledger (n) VALUES (?)", (len(calls),))
        if len(calls) == 1:
            any_host.clock.jump(3000)
        return db.scalar("SELECT count(*) FROM ledger")

    any_host.serve("w", lambda wf, _: wf.step("book", book, tx=LEDGER, timeout="1s",
                                              delay=10))
    c = any_host.client("w")
    c.start("1")
    any_host.run_due()
    any_host.advance(10)
    assert c.status("1").output == 1
    assert any_host.instance("w", "1").backend.rows("SELECT n FROM ledger") == [(2,)]
    assert [h[1] for h in history(any_host)] == ["timed-out", "returned"]


def test_a_tx_statement_cut_at_the_deadline_keeps_its_kind(any_host: FakeHost) -> None:
    """The runner's Backend raises a StoreFault for a failed statement while handling the
    SDK's SqliteError (as RealBackend does): the SqliteError the tx handle raises keeps
    that error's kind, and raises it again for a later statement. So an attempt whose
    statement the host cut at the step's timeout is timed out on a clock held still."""
    seen: list[str] = []

    def cut(method: str, sql: str) -> bool:
        if "app:book" in sql and not seen:
            try:
                raise SqliteError(NARROWED_TEXT, "narrowed-deadline")
            except SqliteError as e:
                raise StoreFault(f"sqlite: {e}") from None
        return False

    def book(db: TxDb) -> Any:
        try:
            db.exec("/*app:book*/ INSERT INTO ledger (n) VALUES (1)")
        except SqliteError as e:
            seen.append(e.kind)
        return db.scalar("SELECT count(*) FROM ledger")

    any_host.serve("w", lambda wf, _: wf.step("book", book, tx=LEDGER, timeout="1s",
                                              delay=10))
    c = any_host.client("w")
    c.start("1")
    any_host.instance("w", "1").backend.fail_when = cut
    any_host.run_due()
    any_host.advance(10)
    assert seen == ["narrowed-deadline"]
    assert [h[1] for h in history(any_host)] == ["timed-out", "returned"]
    assert history(any_host)[0][2].endswith(f"(SqliteError: {NARROWED_TEXT} (an earlier "
                                            "statement of this attempt failed: it is "
                                            "rolled back))")
    assert c.status("1").output == 1


def test_a_step_without_a_timeout_makes_no_deadline_call(any_host: FakeHost) -> None:
    def wf(run: Run, _: Any) -> Any:
        return [run.step("a", lambda: 1), run.try_step("b", lambda: 1 / 0, attempts=1).ok,
                run.all([Step("c", lambda: 2)])]

    any_host.serve("w", wf)
    c = any_host.client("w")
    c.start("1")
    any_host.run_due()
    assert c.status("1").output == [1, False, [2]]
    b = any_host.instance("w", "1").backend
    assert b.deadlines == [] and b.calls["narrow_deadline"] == 0


def test_an_attempt_cut_at_its_deadline_is_recorded_timed_out(any_host: FakeHost) -> None:
    """The host traps guest code still running at the narrowed deadline; the next event's
    last_trap says so, and the next attempt records the cut one as timed out."""
    runs: list[int] = []

    def f() -> int:
        runs.append(1)
        if len(runs) == 1:
            raise Trap("the host cut the attempt at its deadline")
        return len(runs)

    any_host.serve("w", lambda wf, _: wf.step("s", f, timeout="10 seconds", delay=50))
    c = any_host.client("w")
    c.start("1")
    any_host.run_due()
    b = any_host.instance("w", "1").backend
    assert b.trap is not None
    b.trap_info = NARROWED_CUT  # as the host reports a cut at the narrowed deadline
    any_host.advance(50)
    any_host.run_due()
    assert c.status("1").output == 2
    assert history(any_host) == [
        (1, "timed-out", f"timed out: attempt 1 passed its timeout of 10 seconds "
                         f"({NARROWED_REASON})"),
        (2, "returned", None),
    ]


def test_the_last_attempt_cut_at_its_deadline_fails_the_step_timed_out(
        any_host: FakeHost) -> None:
    def f() -> int:
        raise Trap("cut")

    def wf(run: Run, _: Any) -> Any:
        return run.try_step("s", f, timeout="10 seconds", attempts=1).error

    any_host.serve("w", wf)
    c = any_host.client("w")
    c.start("1")
    any_host.run_due()
    any_host.instance("w", "1").backend.trap_info = NARROWED_CUT
    any_host.advance(1000)
    any_host.run_due()
    assert c.status("1").output == (f"timed out: attempt 1 passed its timeout of 10 seconds "
                                    f"({NARROWED_REASON})")
    assert history(any_host)[0][1] == "timed-out"


def test_a_cut_for_another_reason_stays_a_cut(any_host: FakeHost) -> None:
    runs: list[int] = []

    def f() -> int:
        runs.append(1)
        if len(runs) == 1:
            raise Trap("out of fuel")
        return len(runs)

    any_host.serve("w", lambda wf, _: wf.step("s", f, timeout="10 seconds", delay=50))
    any_host.client("w").start("1")
    any_host.run_due()
    any_host.advance(1000)
    assert [h[1] for h in history(any_host)] == ["cut", "returned"]


def test_a_step_branch_times_out_and_retries(any_host: FakeHost) -> None:
    runs: list[int] = []

    def wf(run: Run, _: Any) -> Any:
        return run.all([Step("a", slow_first(any_host, runs, 4000), timeout="1s", delay=10),
                        Step("b", lambda: "b")])

    any_host.serve("w", wf)
    c = any_host.client("w")
    c.start("1")
    any_host.run_due()
    any_host.advance(10)
    assert c.status("1").output == [2, "b"]
    b = any_host.instance("w", "1").backend
    assert b.deadlines == [1000, None, 1000, None]
    errors = b.rows("SELECT outcome, error FROM _wk_wf_attempt WHERE idx = 0 ORDER BY attempt")
    assert errors == [("timed-out", "timed out: attempt 1 passed its timeout of 1 second"),
                      ("returned", None)]


def test_the_narrowed_reason_is_the_hosts_spelt_once_in_the_sdk() -> None:
    """timeouts.py cannot import wkguest.lifecycle (the bindings exist only in a
    component): both read the one plain module that spells the host's reason."""
    from wkguest import reasons
    from wkhost.engine import instance

    assert NARROWED_REASON is reasons.NARROWED_REASON
    assert NARROWED_REASON == instance.NARROWED
    src = (Path(wkguest.__file__).parent / "lifecycle.py").read_text(encoding="utf-8")
    assert "from wkguest.reasons import NARROWED_REASON" in src
    assert not [node for node in ast.parse(src).body if isinstance(node, ast.Assign)
                and getattr(node.targets[0], "id", "") == "NARROWED_REASON"]


class CutCall(Exception):
    """An error whose text reads as the host's for a call it cut at the narrowed deadline."""


NARROWED_TEXT = ("interrupted: the statement ran past the deadline the event set itself "
                 "(lifecycle.narrow-deadline)")


@pytest.mark.parametrize("cut", [
    SqliteError(NARROWED_TEXT, "narrowed-deadline"),
    CallError("timeout: the call to a/b passed the deadline the event set itself "
              "(lifecycle.narrow-deadline): callee-budget: ...", "narrowed-deadline"),
    CallFailed("timeout: the call to a/b passed ...", "narrowed-deadline"),
    FetchError("narrowed-deadline", "no answer in 300 ms, at the deadline the event set "
               "itself (lifecycle.narrow-deadline)"),
], ids=["sql", "call", "backend-call", "fetch"])
def test_a_host_call_cut_at_the_deadline_is_timed_out_on_a_clock_held_still(
        any_host: FakeHost, cut: Exception) -> None:
    """A test's host clock may not move while the host's real deadline passes: the
    kind the host gave the error of a call it cut tells the attempt timed out all the
    same, also when the step's code wrapped that error in its own."""
    calls: list[int] = []

    def f() -> Any:
        calls.append(1)
        if len(calls) == 1:
            raise cut
        if len(calls) == 2:
            try:
                raise cut
            except Exception as e:
                raise RuntimeError("the converter failed") from e
        return len(calls)

    any_host.serve("w", lambda wf, _: wf.step("s", f, timeout="300 ms", delay=10,
                                              backoff="constant"))
    c = any_host.client("w")
    c.start("1")
    any_host.run_due()
    for _ in range(2):
        any_host.advance(10)
    assert c.status("1").output == 3
    assert [h[1] for h in history(any_host)] == ["timed-out", "timed-out", "returned"]
    assert history(any_host)[0][2].startswith("timed out: attempt 1 passed its timeout of "
                                              f"300 ms ({type(cut).__name__}: ")


@pytest.mark.parametrize("cut", [
    CutCall(NARROWED_TEXT),  # the host's words, no kind: a guest's own exception
    SqliteError(NARROWED_TEXT, "deadline"),  # the event's own deadline, not the step's
    CallError("timeout: ... (lifecycle.narrow-deadline)", "deadline"),
    # A fetch's timeout whose words read as cut: the kind is the fetch's own timeout's.
    FetchError("timeout", "no answer in 300 ms, at the deadline the event set itself "
               "(lifecycle.narrow-deadline)"),
], ids=["words-only", "sql-deadline", "call-deadline", "fetch-words-only"])
def test_an_error_that_only_reads_as_cut_is_an_ordinary_failure(
        any_host: FakeHost, cut: Exception) -> None:
    calls: list[int] = []

    def f() -> Any:
        calls.append(1)
        if len(calls) == 1:
            raise cut
        return "ok"

    any_host.serve("w", lambda wf, _: wf.step("s", f, timeout="300 ms", delay=10))
    any_host.client("w").start("1")
    any_host.run_due()
    any_host.advance(10)
    assert [h[1] for h in history(any_host)] == ["failed", "returned"]


def test_an_error_naming_the_deadline_without_a_timeout_is_an_ordinary_failure(
        any_host: FakeHost) -> None:
    calls: list[int] = []

    def f() -> Any:
        calls.append(1)
        if len(calls) == 1:
            raise CutCall("timeout: ... (lifecycle.narrow-deadline)")
        return "ok"

    any_host.serve("w", lambda wf, _: wf.step("s", f, delay=10))
    any_host.client("w").start("1")
    any_host.run_due()
    any_host.advance(10)
    assert [h[1] for h in history(any_host)] == ["failed", "returned"]


# What the host's text for a call it cut at the narrowed deadline ends with: for people,
# since code reads the kind the host gives beside it.
CUT_MARK = "(lifecycle.narrow-deadline)"


def test_the_host_words_its_cut_calls_as_before() -> None:
    from wkhost.engine import instance
    from wkhost.interfaces import sqlite

    assert CUT_MARK in sqlite.NARROWED and CUT_MARK in instance.NARROWED
    host = Path(__file__).resolve().parents[3] / "host"
    for source in ("interfaces/http.py", "events/requests.py"):  # messages built inline
        assert f"set itself {CUT_MARK}" in (host / source).read_text().replace(
            '"\n                    f"', "").replace('" "', ""), source
