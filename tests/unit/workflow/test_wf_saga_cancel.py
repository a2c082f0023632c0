"""Compensation on cancel, and the failures that never compensate. `cancel(id,
compensate=True)`: the next run replays the function up to its first new position, does
nothing new there, runs the compensations of its completed steps newest first, and the
instance ends cancelled. A plain cancel, a cancel of a parked instance, and every failure
that is not the workflow's own (a reordered deploy, a mistake in the code, too many bad
runs) compensate nothing. Both replay modes."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from wkguest.workflow import Compensation, Config, Run
from wkguest.workflow.testing import FakeHost, Trap

from .conftest import Raw
from .test_wf_saga import CONFIG, journal, started

DAY = 86_400_000
VERSION = {"v": 1}


@pytest.fixture(autouse=True)
def _v1() -> None:
    VERSION["v"] = 1


def order(ran: Counter[str], undo: Any = None) -> Any:
    """reserve and charge, each with its compensation (charge's: `undo`, if given), then
    a day's sleep and a ship step."""
    def wf(run: Run, _: Any) -> Any:
        run.step("reserve", lambda: ran.update(["reserve"]),
                 compensate=lambda: ran.update(["undo reserve"]))
        run.step("charge", lambda: ran.update(["charge"]),
                 compensate=undo or (lambda: ran.update(["undo charge"])))
        run.sleep("cool-off", DAY)
        run.step("ship", lambda: ran.update(["ship"]))
        return "shipped"
    return wf


def test_cancel_with_compensation_undoes_the_completed_steps(any_host: FakeHost) -> None:
    ran: Counter[str] = Counter()
    c = started(any_host, order(ran))
    assert c.status("1").state == "waiting"
    s = c.cancel("1", compensate=True)
    assert (s.state, s.wake_at) == ("compensating", any_host.clock.now())
    any_host.run_due()
    s = c.status("1")
    assert (s.state, s.error, s.output) == ("cancelled", None, None)
    assert ran == {"reserve": 1, "charge": 1, "undo charge": 1, "undo reserve": 1}
    assert journal(any_host.instance("w", "1").backend) == [
        (0, "S", "reserve"), (1, "S", "charge"), (2, "S", "compensate:charge"),
        (3, "S", "compensate:reserve")]  # the sleep in progress gave its position up
    any_host.advance(DAY)
    assert "ship" not in ran


def test_a_plain_cancel_compensates_nothing(any_host: FakeHost) -> None:
    ran: Counter[str] = Counter()
    c = started(any_host, order(ran))
    assert c.cancel("1").state == "cancelled"
    any_host.advance(DAY)
    assert ran == {"reserve": 1, "charge": 1}


def test_a_second_cancel_with_compensation_changes_nothing(any_host: FakeHost) -> None:
    ran: Counter[str] = Counter()
    c = started(any_host, order(ran))
    c.cancel("1", compensate=True)
    assert c.cancel("1", compensate=True).state == "compensating"
    any_host.run_due()
    assert c.status("1").state == "cancelled"
    assert ran["undo charge"] == ran["undo reserve"] == 1


@pytest.mark.parametrize("interruption", ["trap", "backoff"])
@pytest.mark.parametrize("which", ["reserve", "charge"])
def test_a_cancels_compensation_resumes_after_a_trap_or_a_backoff(
        any_host: FakeHost, interruption: str, which: str) -> None:
    """The runs after the first stop the function where the cancel stopped it (its
    positions from there on are the compensations', some recorded), not at a reorder;
    a compensation recorded as done never runs again."""
    ran: Counter[str] = Counter()

    def interrupted_once(name: str) -> Any:
        def undo() -> None:
            ran[f"undo {name}"] += 1
            if name == which and ran[f"undo {name}"] == 1:
                if interruption == "trap":
                    raise Trap(f"trapped inside compensate:{name}")
                raise RuntimeError("the bank is busy")
        return Compensation(undo, backoff_ms=2000)

    def wf(run: Run, _: Any) -> Any:
        run.step("reserve", lambda: ran.update(["reserve"]),
                 compensate=interrupted_once("reserve"))
        run.step("charge", lambda: ran.update(["charge"]),
                 compensate=interrupted_once("charge"))
        run.sleep("cool-off", DAY)
        run.step("ship", lambda: ran.update(["ship"]))

    c = started(any_host, wf)
    c.cancel("1", compensate=True)
    any_host.run_due()
    assert c.status("1").state == "compensating"
    assert ran[f"undo {which}"] == 1
    any_host.advance(2000)
    s = c.status("1")
    assert s.state == "cancelled", s.error
    again = {"undo reserve": 1, "undo charge": 1} | {f"undo {which}": 2}
    assert ran == {"reserve": 1, "charge": 1, **again}
    assert [n for _, _, n in journal(any_host.instance("w", "1").backend)] == [
        "reserve", "charge", "compensate:charge", "compensate:reserve"]


def test_a_cancel_with_compensation_of_a_step_in_backoff_stops_it(any_host: FakeHost) -> None:
    ran: Counter[str] = Counter()

    def flaky() -> None:
        ran["flaky"] += 1
        raise RuntimeError("not yet")

    def wf(run: Run, _: Any) -> Any:
        run.step("reserve", lambda: 1, compensate=lambda: ran.update(["undo reserve"]))
        run.step("flaky", flaky, attempts=5, backoff_ms=60_000)

    c = started(any_host, wf)
    assert (c.status("1").state, ran["flaky"]) == ("running", 1)
    c.cancel("1", compensate=True)
    any_host.run_due()
    assert c.status("1").state == "cancelled"
    assert ran == {"flaky": 1, "undo reserve": 1}  # the step in backoff was not tried again
    assert journal(any_host.instance("w", "1").backend) == [
        (0, "S", "reserve"), (1, "S", "compensate:reserve")]


def test_a_cancel_while_compensating_its_own_failure_lets_it_fail(any_host: FakeHost) -> None:
    ran: Counter[str] = Counter()

    def wf(run: Run, _: Any) -> Any:
        run.step("reserve", lambda: 1, compensate=Compensation(
            lambda: ran.update(["undo"]) if ran["undo"] else ran.update(["undo"]) or 1 / 0))
        run.fail("out of stock")

    c = started(any_host, wf)
    assert c.status("1").state == "compensating"  # its compensation's backoff
    assert c.cancel("1", compensate=True).state == "compensating"
    any_host.advance(1000)
    s = c.status("1")
    assert (s.state, ran["undo"]) == ("failed", 2)
    assert s.error == "out of stock (compensated: 1 compensation(s) ran)"


def test_a_cancel_of_a_parked_instance_never_compensates(any_host: FakeHost) -> None:
    ran: Counter[str] = Counter()

    def wf(run: Run, _: Any) -> Any:
        run.step("reserve", lambda: 1, compensate=lambda: ran.update(["undo"]))
        run.sleep("bad", -1)  # a mistake in the code: parks

    c = started(any_host, wf)
    assert c.status("1").state == "parked"
    assert c.cancel("1", compensate=True).state == "cancelled"
    any_host.advance(DAY)
    assert ran == {}


def versioned(ran: Counter[str]) -> Any:
    """v1: reserve (with its compensation), a sleep, then a step that fails; v2 swaps
    the sleep for a step (a reordered deploy)."""
    def wf(run: Run, _: Any) -> Any:
        run.step("reserve", lambda: 1, compensate=lambda: ran.update(["undo"]))
        if VERSION["v"] == 1:
            run.sleep("cool-off", 1000)
        else:
            run.step("audit", lambda: 2)
        run.step("charge", lambda: 1 / 0, attempts=1)
    return wf


def test_a_reordered_deploy_of_a_saga_parks_and_compensates_nothing(
        any_host: FakeHost) -> None:
    ran: Counter[str] = Counter()
    c = started(any_host, versioned(ran))
    assert c.status("1").state == "waiting"
    VERSION["v"] = 2
    any_host.advance(1000)
    s = c.status("1")
    assert s.state == "parked"
    assert "the code changed the order of its steps: position 1" in (s.error or "")
    any_host.advance(DAY)
    assert ran == {}
    assert c.cancel("1", compensate=True).state == "cancelled"
    assert ran == {}


def test_a_reorder_met_while_compensating_parks_and_stops_compensating(
        any_host: FakeHost) -> None:
    ran: Counter[str] = Counter()

    def wf(run: Run, _: Any) -> Any:
        run.step("a", lambda: 1, compensate=lambda: ran.update(["undo a"]))
        if VERSION["v"] == 1:
            run.step("b", lambda: 1, compensate=Compensation(lambda: 1 / 0, attempts=3))
        run.fail("given up")

    c = started(any_host, wf)
    assert c.status("1").state == "compensating"  # compensate:b in backoff
    VERSION["v"] = 2  # b is gone: position 1 now meets the failure's compensations
    any_host.advance(1000)
    s = c.status("1")
    assert s.state == "parked", s.error
    assert ran == {}


def test_too_many_bad_runs_park_without_compensating(any_host: FakeHost) -> None:
    ran: Counter[str] = Counter()

    def wf(run: Run, _: Any) -> Any:
        run.step("a", lambda: 1, compensate=lambda: ran.update(["undo a"]))
        raise RuntimeError("outside any step")

    c = started(any_host, wf, Config(attempts=2, backoff_ms=10))
    for _ in range(5):
        any_host.advance(1000)
    s = c.status("1")
    assert s.state == "parked" and "runs in a row" in (s.error or "")
    assert ran == {}


def test_a_cancel_with_compensation_of_a_running_saga_with_none_registered(
        any_host: FakeHost) -> None:
    def wf(run: Run, _: Any) -> Any:
        run.step("a", lambda: 1)
        run.sleep("rest", DAY)

    c = started(any_host, wf, CONFIG)
    c.cancel("1", compensate=True)
    any_host.run_due()
    s = c.status("1")
    assert (s.state, s.error, s.positions) == ("cancelled", None, 1)


def test_a_plain_cancel_of_a_compensating_instance_ends_it_at_once(
        any_host: FakeHost) -> None:
    ran: Counter[str] = Counter()

    def wf(run: Run, _: Any) -> Any:
        run.step("a", lambda: 1, compensate=lambda: ran.update(["undo a"]))
        run.step("b", lambda: 1, compensate=Compensation(lambda: 1 / 0, attempts=3))
        run.fail("given up")

    c = started(any_host, wf)
    assert c.status("1").state == "compensating"  # compensate:b in backoff
    assert c.cancel("1").state == "cancelled"
    any_host.advance(DAY)
    assert ran == {}  # the compensations not yet run never run


def test_an_unknown_compensate_value_is_a_plain_cancel(any_host: FakeHost) -> None:
    ran: Counter[str] = Counter()
    c = started(any_host, order(ran))
    status, answer = Raw(any_host, "w")("1", "cancel", {"compensate": "yes"})
    assert (status, answer["state"]) == (200, "cancelled")
    any_host.advance(DAY)
    assert ran == {"reserve": 1, "charge": 1}
    assert c.status("1").state == "cancelled"
