"""step.do's rollback (Cloudflare's saga rollback over the runner's compensation): on the
instance's failure the rollbacks of its completed steps run newest first with the
original step's context, its output and the failure's message; on terminate(rollback=True)
with error None; rollback_config's retries; a cut inside one; bad ones named. FakeHost,
both replay modes."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from wkguest.cloudflare import WorkflowEntrypoint, WorkflowEvent, WorkflowStep
from wkguest.workflow.testing import FakeHost, Trap

from .conftest import DAY, Serve, journal

UNDONE: list[Any] = []
CALLS: Counter[str] = Counter()
CHARGE_ERROR = "step 'charge' failed after 1 attempt(s): RuntimeError: card declined"


@pytest.fixture(autouse=True)
def _reset() -> None:
    UNDONE.clear()
    CALLS.clear()


def undo(ctx: Any, output: Any, error: str | None) -> str:
    CALLS[f"undo {output}"] += 1
    UNDONE.append((ctx.step.name, ctx.step.count, ctx.attempt, output, error))
    return f"undid {output}"


def reserve(item: str) -> Any:
    def f() -> str:
        CALLS[item] += 1
        if item == "car" and CALLS[item] == 1:
            raise ConnectionError("the car desk is busy")  # so its step took 2 attempts
        return f"{item}-ref"
    return f


def declined() -> None:
    raise RuntimeError("card declined")


class Trip(WorkflowEntrypoint):
    """Reserve a hotel and a car (rollbacks), note (none), then charge or wait."""

    def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        for item in ("hotel", "car"):
            step.do("reserve", {"retries": {"delay": 1}}, reserve(item), rollback=undo)
        step.do("note", lambda: "noted")
        if event.payload == "wait":
            step.wait_for_event("go", type="go", timeout="1 day")
        step.do("charge", {"retries": {"limit": 0}}, declined, rollback=undo)
        return "never"


def failed(any_host: FakeHost, serve: Serve, params: Any = None) -> Any:
    inst = serve(Trip).create(id="t", params=params)
    any_host.run_due()
    any_host.advance(1)  # the car's second attempt
    return inst


def test_rollbacks_run_newest_first_with_context_output_and_error(
        any_host: FakeHost, serve: Serve) -> None:
    inst = failed(any_host, serve)
    s = inst.status()
    assert (s.status, s.state) == ("errored", "failed")
    assert s.error == f"{CHARGE_ERROR} (compensated: 2 compensation(s) ran)"
    # the failed charge registered nothing: only completed steps are rolled back
    assert UNDONE == [("reserve", 2, 2, "car-ref", CHARGE_ERROR),
                      ("reserve", 1, 1, "hotel-ref", CHARGE_ERROR)]
    assert [r[2] for r in journal(any_host, "t")] == [
        "reserve", "reserve", "note", "charge", "compensate:reserve", "compensate:reserve"]
    any_host.advance(DAY)
    assert CALLS == {"hotel": 1, "car": 2, "undo car-ref": 1, "undo hotel-ref": 1}


def test_a_completed_instance_rolls_nothing_back(any_host: FakeHost, serve: Serve) -> None:
    class Fine(WorkflowEntrypoint):
        def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
            return step.do("reserve", reserve("hotel"), rollback=undo)

    inst = serve(Fine).create(id="f")
    any_host.run_due()
    assert (inst.status().output, UNDONE) == ("hotel-ref", [])


def test_terminate_with_rollback_runs_them_with_no_error(any_host: FakeHost,
                                                        serve: Serve) -> None:
    inst = failed(any_host, serve, "wait")
    assert inst.status().status == "waiting"
    inst.terminate(rollback=True)
    any_host.run_due()
    s = inst.status()
    assert (s.status, s.state) == ("terminated", "cancelled")
    assert UNDONE == [("reserve", 2, 2, "car-ref", None), ("reserve", 1, 1, "hotel-ref", None)]


def test_terminate_without_rollback_runs_none(any_host: FakeHost, serve: Serve) -> None:
    inst = failed(any_host, serve, "wait")
    inst.terminate()
    any_host.run_due()
    assert (inst.status().status, UNDONE) == ("terminated", [])


class Flaky(WorkflowEntrypoint):
    """A step whose rollback fails `event.payload[0]` times, under rollback_config
    `event.payload[1]` (None: the defaults)."""

    def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        fails, config = event.payload

        def rollback(ctx: Any, output: Any, error: Any) -> None:
            CALLS["rollback"] += 1
            if CALLS["rollback"] <= fails:
                raise ConnectionError("refund service down")

        step.do("pay", lambda: "paid", rollback=rollback, rollback_config=config)
        step.do("ship", {"retries": {"limit": 0}}, lambda: 1 // 0)


def rollback_waits(host: FakeHost, n: int) -> list[int]:
    host.run_due()
    gaps = []
    for _ in range(n):
        gap = host.instance("flow", "r").backend.alarm - host.clock.now()  # type: ignore[operator]
        gaps.append(gap)
        host.advance(gap)
    return gaps


def test_rollback_config_sets_its_retries(any_host: FakeHost, serve: Serve) -> None:
    config = {"retries": {"limit": 2, "delay": "3 seconds", "backoff": "constant"}}
    inst = serve(Flaky).create(id="r", params=[99, config])
    assert rollback_waits(any_host, 2) == [3000, 3000]
    s = inst.status()
    assert (s.status, CALLS["rollback"]) == ("errored", 3)
    assert s.error is not None and "1 of 1 compensation(s) failed: step 'compensate:pay' " \
        "failed after 3 attempt(s): ConnectionError: refund service down" in s.error


def test_rollbacks_retry_as_cloudflares_defaults(any_host: FakeHost, serve: Serve) -> None:
    inst = serve(Flaky).create(id="r", params=[2, None])
    assert rollback_waits(any_host, 2) == [10_000, 20_000]
    s = inst.status()
    assert (s.status, CALLS["rollback"]) == ("errored", 3)
    assert s.error is not None and "compensated: 1 compensation(s) ran" in s.error


class Cut(WorkflowEntrypoint):
    def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        def rollback(ctx: Any, output: Any, error: Any) -> None:
            CALLS[f"rollback {output}"] += 1
            if output == "b" and CALLS["rollback b"] == 1:
                raise Trap("killed inside the rollback")

        for name in ("a", "b", "c"):
            step.do(name, lambda n=name: n, rollback=rollback)
        step.do("fail", {"retries": {"limit": 0}}, lambda: 1 // 0)


def test_a_cut_inside_a_rollback_runs_it_again_and_never_one_recorded_done(
        any_host: FakeHost, serve: Serve) -> None:
    inst = serve(Cut).create(id="c")
    any_host.run_due()
    for _ in range(5):
        any_host.advance(10_000)
    assert inst.status().status == "errored"
    assert CALLS == {"rollback c": 1, "rollback b": 2, "rollback a": 1}
    assert any_host.traps == 1


class BadRollback(WorkflowEntrypoint):
    def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        rollback, config = event.payload
        step.do("x", lambda: 1, rollback=undo if rollback else 5, rollback_config=config)


@pytest.mark.parametrize(("params", "error"), [
    ([False, None], "step.do('x'): rollback must be callable"),
    ([True, {"retries": {"limit": 1}, "retry": 1}],
     "step.do('x'): the rollback_config: unknown key(s) 'retry'"),
    ([True, "fast"], "step.do('x'): the rollback_config must be a dict"),
    ([True, {"retries": {"limit": -1}}], "step.do('x'): compensate: step option 'limit'"),
])
def test_a_bad_rollback_parks_the_instance_naming_it(
        any_host: FakeHost, serve: Serve, params: Any, error: str) -> None:
    inst = serve(BadRollback).create(id="b", params=params)
    any_host.run_due()
    s = inst.status()
    assert (s.status, s.state) == ("errored", "parked")
    assert s.error is not None and error in s.error, s.error
