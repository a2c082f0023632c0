"""Saga compensation: `wf.step(name, f, compensate=g)`. When the workflow fails with its
own failure (a step out of attempts, wf.fail) the compensations of its completed steps run
newest first, each as a recorded step with its own retries; a compensation's own failure
is reported, never dropped. Both replay modes (a warm cache, a fresh runner every event)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from wkguest.workflow import Compensation, Config, Run, StepFailed
from wkguest.workflow.groups.branches import Step
from wkguest.workflow.testing import FakeBackend, FakeHost, Trap

from .test_wf_tx import LEDGER, booking, ledger

CONFIG = Config(attempts=2, backoff_ms=1000)


def journal(b: FakeBackend) -> list[tuple[Any, ...]]:
    return list(b.rows("SELECT pos, kind, name FROM _wk_wf_step ORDER BY pos"))


def started(host: FakeHost, fn: Any, config: Config = CONFIG) -> Any:
    host.serve("w", fn, config)
    c = host.client("w")
    c.start("1", None)
    host.run_due()
    return c


def broken() -> Any:
    raise ValueError("the warehouse is closed")


def test_saga_test_of_seed_004(any_host: FakeHost) -> None:
    """Seed 004's SagaTest: step a sets a_done, its compensation undoes it; a later step
    fails for good, so a's compensation runs, once, and the workflow fails."""
    state = {"a_done": 0}
    calls: Counter[str] = Counter()

    def a() -> int:
        calls["a"] += 1
        state["a_done"] = 1
        return 1

    def undo_a() -> None:
        calls["undo a"] += 1
        state["a_done"] = 0

    def saga_test(run: Run, _: Any) -> Any:
        run.step("a", a, compensate=undo_a)
        run.step("b", broken)
        return "never"

    c = started(any_host, saga_test)
    any_host.advance(1000)  # b's second and last attempt
    s = c.status("1")
    assert s.state == "failed"
    assert s.error is not None and s.error.startswith(
        "step 'b' failed after 2 attempt(s): ValueError: the warehouse is closed")
    assert "compensated: 1 compensation(s) ran" in s.error
    assert state == {"a_done": 0}
    assert calls == {"a": 1, "undo a": 1}
    b = any_host.instance("w", "1").backend
    assert journal(b) == [(0, "S", "a"), (1, "X", "b"), (2, "S", "compensate:a")]
    any_host.advance(7 * 86_400_000)  # retention: nothing runs again
    assert calls == {"a": 1, "undo a": 1}


def test_compensations_run_in_reverse_order_of_registration(any_host: FakeHost) -> None:
    order: list[str] = []

    def wf(run: Run, _: Any) -> Any:
        for name in ("reserve", "charge", "ship"):
            run.step(name, lambda n=name: n, compensate=lambda n=name: order.append(n))
        run.step("plain", lambda: 0)  # no compensation: nothing to undo
        run.try_step("fails", broken, compensate=lambda: order.append("never"))
        run.fail("given up")

    c = started(any_host, wf)
    any_host.advance(1000)
    s = c.status("1")
    assert (s.state, order) == ("failed", ["ship", "charge", "reserve"])
    assert s.error == "given up (compensated: 3 compensation(s) ran)"
    names = [n for _, _, n in journal(any_host.instance("w", "1").backend)]
    assert names[-3:] == ["compensate:ship", "compensate:charge", "compensate:reserve"]


def test_a_compensation_retries_under_its_own_settings(any_host: FakeHost) -> None:
    tries: list[int] = []

    def release() -> str:
        tries.append(any_host.clock.now())
        if len(tries) < 3:
            raise RuntimeError(f"try {len(tries)}")
        return "released"

    def wf(run: Run, _: Any) -> Any:
        run.step("reserve", lambda: 1,
                 compensate=Compensation(release, attempts=3, backoff_ms=5000, factor=3))
        run.step("charge", broken, attempts=1)

    c = started(any_host, wf)
    s = c.status("1")
    assert (s.state, len(tries)) == ("compensating", 1)
    assert s.wake_at == tries[0] + 5000
    any_host.advance(4999)
    assert len(tries) == 1  # its backoff holds, whatever wakes it
    any_host.advance(1)
    assert (c.status("1").state, len(tries)) == ("compensating", 2)
    any_host.advance(15_000)  # backoff_ms × factor
    s = c.status("1")
    assert (s.state, len(tries)) == ("failed", 3)
    assert [b - a for a, b in zip(tries, tries[1:], strict=False)] == [5000, 15_000]
    assert "compensated: 1 compensation(s) ran" in (s.error or "")


def test_a_compensation_that_fails_for_good_is_reported_and_the_others_run(
        any_host: FakeHost) -> None:
    ran: list[str] = []

    def fails_for_good() -> None:
        ran.append("charge")
        raise RuntimeError("refund refused")

    def wf(run: Run, _: Any) -> Any:
        run.step("reserve", lambda: 1, compensate=lambda: ran.append("reserve"))
        run.step("charge", lambda: 2, compensate=Compensation(fails_for_good, attempts=2))
        run.step("ship", lambda: 3, compensate=lambda: ran.append("ship"))
        run.step("notify", broken, attempts=1)

    c = started(any_host, wf)
    any_host.advance(1000)  # compensate:charge's second attempt
    s = c.status("1")
    assert s.state == "failed"
    assert ran == ["ship", "charge", "charge", "reserve"]
    assert s.error == ("step 'notify' failed after 1 attempt(s): ValueError: the warehouse "
                       "is closed; 1 of 3 compensation(s) failed: step 'compensate:charge' "
                       "failed after 2 attempt(s): RuntimeError: refund refused")
    rows = journal(any_host.instance("w", "1").backend)
    assert rows[-3:] == [(4, "S", "compensate:ship"), (5, "X", "compensate:charge"),
                         (6, "S", "compensate:reserve")]


def test_a_trap_inside_a_compensation_runs_it_again_and_never_a_done_one(
        any_host: FakeHost) -> None:
    ran: Counter[str] = Counter()

    def trap_once() -> None:
        ran["charge"] += 1
        if ran["charge"] == 1:
            raise Trap("the instance traps inside compensate:charge")

    def wf(run: Run, _: Any) -> Any:
        run.step("reserve", lambda: 1, compensate=lambda: ran.update(["reserve"]))
        run.step("charge", lambda: 2, compensate=trap_once)
        run.step("ship", lambda: 3, compensate=lambda: ran.update(["ship"]))
        run.step("notify", broken, attempts=1)

    c = started(any_host, wf)
    assert any_host.traps == 1
    assert c.status("1").state == "compensating"
    assert ran == {"ship": 1, "charge": 1}
    any_host.advance(1000)  # the watchdog: replays to the failure, then on
    s = c.status("1")
    assert s.state == "failed", s.error
    assert ran == {"ship": 1, "charge": 2, "reserve": 1}  # ship, recorded done: not again
    assert "compensated: 3 compensation(s) ran" in (s.error or "")


def test_a_caught_step_failure_does_not_compensate(any_host: FakeHost) -> None:
    ran: list[str] = []

    def wf(run: Run, _: Any) -> Any:
        run.step("reserve", lambda: 1, compensate=lambda: ran.append("reserve"))
        try:
            run.step("charge", broken, attempts=1)
        except StepFailed:
            return "handled"
        return "never"

    c = started(any_host, wf)
    assert (c.status("1").state, c.status("1").output, ran) == ("completed", "handled", [])


def test_a_failure_with_no_compensation_finishes_as_before(any_host: FakeHost) -> None:
    def wf(run: Run, _: Any) -> Any:
        run.step("reserve", lambda: 1, attempts=3)
        run.step("charge", broken, attempts=1)

    c = started(any_host, wf)
    s = c.status("1")
    assert (s.state, s.error) == ("failed", "step 'charge' failed after 1 attempt(s): "
                                            "ValueError: the warehouse is closed")
    assert len(journal(any_host.instance("w", "1").backend)) == 2


@pytest.mark.parametrize(("compensate", "says"), [
    ("not callable", "compensate: must be a callable taking no argument or a "
                     "workflow.Compensation, not 'not callable' (str)"),
    (Compensation(lambda: None, attempts=0), "compensate: step option attempts must be at "
                                             "least 1, got 0"),
    (Compensation(lambda: None, backoff_ms="soon"),  # type: ignore[arg-type]
     "compensate: step option 'backoff_ms' must be a whole number of milliseconds"),
    (Compensation(42), "compensate: must be a callable"),  # type: ignore[arg-type]
])
def test_a_bad_compensate_parks_naming_it(any_host: FakeHost, compensate: Any,
                                          says: str) -> None:
    ran: list[str] = []

    def wf(run: Run, _: Any) -> Any:
        run.step("reserve", lambda: ran.append("reserve"), compensate=compensate)
        run.step("charge", lambda: ran.append("charge"))

    c = started(any_host, wf)
    s = c.status("1")
    assert s.state == "parked"
    assert (s.error or "").startswith("wf.step('reserve'): " + says), s.error
    assert ran == ["reserve"]  # checked when the step completes; nothing after it ran


def test_a_step_name_too_long_for_its_compensation_parks(any_host: FakeHost) -> None:
    def wf(run: Run, _: Any) -> Any:
        run.step("r" * 250, lambda: 1, compensate=lambda: None)

    c = started(any_host, wf)
    s = c.status("1")
    assert s.state == "parked" and "the compensation's step name must have" in (s.error or "")


def test_a_groups_step_branches_compensate_in_reverse_branch_order(
        any_host: FakeHost) -> None:
    """wf.all's branches share one position; their compensations run newest first in
    the order the code registered them: the later steps', then the branches' from the
    last branch to the first."""
    order: list[str] = []

    def undo(name: str) -> Any:
        return lambda: order.append(name)

    def wf(run: Run, _: Any) -> Any:
        run.step("first", lambda: 0, compensate=undo("first"))
        run.all([Step(f"b{i}", lambda i=i: i, compensate=undo(f"b{i}")) for i in range(3)])
        run.step("last", lambda: 4, compensate=undo("last"))
        run.step("fails", broken, attempts=1)

    c = started(any_host, wf)
    s = c.status("1")
    assert s.state == "failed", s.error
    assert order == ["last", "b2", "b1", "b0", "first"]
    names = [n for _, _, n in journal(any_host.instance("w", "1").backend)]
    assert names[-5:] == [f"compensate:{n}" for n in order]


def test_a_tx_compensation_writes_with_its_record_once_whatever_traps(
        any_host: FakeHost) -> None:
    """Compensation(g, tx=...): g(db) undoes a tx step's booking in the same kind of
    transaction; a trap after its write rolls it back, so the ledger shows it once."""
    calls: Counter[str] = Counter()

    def wf(run: Run, _: Any) -> Any:
        run.step("book a", booking(calls, "a"), tx=LEDGER,
                 compensate=Compensation(booking(calls, "undo a", -100, trap_first=1),
                                         tx=LEDGER))
        run.step("fails", broken, attempts=1)

    c = started(any_host, wf)
    assert any_host.traps == 1 and c.status("1").state == "compensating"
    b = any_host.instance("w", "1").backend
    assert ledger(b) == {"a": 1}  # the trapped attempt's write rolled back
    any_host.advance(1000)
    assert c.status("1").state == "failed"
    assert (ledger(b), calls) == ({"a": 1, "undo a": 1}, {"a": 1, "undo a": 2})


def test_a_bad_tx_of_a_compensation_parks_naming_it(any_host: FakeHost) -> None:
    def wf(run: Run, _: Any) -> Any:
        bad: Any = "yes"
        run.step("a", lambda: 1, compensate=Compensation(lambda db: 1, tx=bad))

    c = started(any_host, wf)
    s = c.status("1")
    assert s.state == "parked"
    assert "compensate: step option 'tx' must be True, False or a workflow.Tables" in (
        s.error or "")
