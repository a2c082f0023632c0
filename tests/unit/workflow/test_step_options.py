"""Step options: limit, delay (a duration or a function of the error), backoff kinds, the
Config's defaults, durations in sleeps, waits and branches, and each bad option's error.

The waits are read off the fake clock: each attempt logs the time it ran at, and the
step's row holds the next attempt's time."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from wkguest.workflow import Compensation, Config, Run, Sleep, Step, StepContext, Wait
from wkguest.workflow.testing import FakeHost

HOUR = 3_600_000


def flaky(host: FakeHost, log: list[int], fails: int) -> Any:
    """A step function whose first `fails` calls raise; each call logs the clock."""
    def f() -> Any:
        log.append(host.clock.now())
        if len(log) <= fails:
            raise RuntimeError(f"failure {len(log)}")
        return "ok"
    return f


def gaps(log: list[int]) -> list[int]:
    return [b - a for a, b in zip(log, log[1:], strict=False)]


def next_attempt_at(host: FakeHost, id: str = "1") -> Any:
    return host.instance("w", id).backend.rows(
        "SELECT next_attempt_at FROM _wk_wf_step WHERE pos = 0")[0][0]


def drive(host: FakeHost, step_ms: int, rounds: int) -> None:
    host.run_due()
    for _ in range(rounds):
        host.advance(step_ms)


@pytest.mark.parametrize(("kind", "waits"), [
    ("constant", [1000, 1000, 1000]),
    ("linear", [1000, 2000, 3000]),
    ("exponential", [1000, 3000, 9000]),
])
def test_each_backoff_kind_grows_the_wait_its_way(any_host: FakeHost, kind: str,
                                                  waits: list[int]) -> None:
    log: list[int] = []
    any_host.serve("w", lambda wf, _: wf.step("s", flaky(any_host, log, 3), attempts=4,
                                              delay="1 second", backoff=kind, factor=3))
    c = any_host.client("w")
    c.start("1")
    any_host.run_due()
    assert next_attempt_at(any_host) == log[0] + 1000
    drive(any_host, 500, 40)
    assert gaps(log) == waits
    assert c.status("1").output == "ok"


def test_the_default_backoff_is_exponential_by_factor_two(any_host: FakeHost) -> None:
    log: list[int] = []
    any_host.serve("w", lambda wf, _: wf.step("s", flaky(any_host, log, 3), delay=500))
    any_host.client("w").start("1")
    drive(any_host, 250, 40)
    assert gaps(log) == [500, 1000, 2000]


def test_max_backoff_caps_growth_but_never_below_the_base(any_host: FakeHost) -> None:
    log: list[int] = []

    def wf(run: Run, _: Any) -> Any:
        return run.step("s", flaky(any_host, log, 2), delay="1 hour", backoff="linear",
                        max_backoff_ms=60_000)

    any_host.serve("w", wf)
    any_host.client("w").start("1")
    drive(any_host, 60_000, 200)
    assert gaps(log) == [HOUR, HOUR]  # the cap (1 minute) is under the base: the base


def test_limit_is_the_retries_after_the_first_attempt(any_host: FakeHost) -> None:
    log: list[int] = []

    def wf(run: Run, _: Any) -> Any:
        r = run.try_step("s", flaky(any_host, log, 99), limit=2, delay=10)
        once = run.try_step("once", lambda: 1 / 0, limit=0)
        return [r.attempts, r.error, once.attempts]

    any_host.serve("w", wf)
    c = any_host.client("w")
    c.start("1")
    drive(any_host, 10, 20)
    assert c.status("1").output == [3, "RuntimeError: failure 3", 1]
    assert len(log) == 3


def test_a_delay_function_gets_the_context_and_error_and_sets_the_base(
        any_host: FakeHost) -> None:
    log: list[int] = []
    seen: list[tuple[int, str, str]] = []

    def delay(ctx: StepContext, error: Exception) -> Any:
        seen.append((ctx.attempt, ctx.name, str(error)))
        return "2 seconds" if ctx.attempt == 1 else 5000

    def wf(run: Run, _: Any) -> Any:
        return run.step("s", flaky(any_host, log, 2), delay=delay, backoff="constant")

    any_host.serve("w", wf)
    c = any_host.client("w")
    c.start("1")
    drive(any_host, 1000, 20)
    assert gaps(log) == [2000, 5000]
    assert {s for s in seen} == {(1, "s", "failure 1"), (2, "s", "failure 2")}
    assert c.status("1").output == "ok"


def test_a_delay_functions_answer_goes_through_the_backoff_kind(any_host: FakeHost) -> None:
    log: list[int] = []
    any_host.serve("w", lambda wf, _: wf.step("s", flaky(any_host, log, 3),
                                              delay=lambda ctx, e: "1s", factor=3))
    any_host.client("w").start("1")
    drive(any_host, 1000, 20)
    assert gaps(log) == [1000, 3000, 9000]


@pytest.mark.parametrize(("delay", "says"), [
    (lambda ctx, e: 1 / 0, "the step's delay function raised ZeroDivisionError"),
    (lambda ctx, e: "soon", "the step's delay function's answer: 'soon' is not a duration"),
    (lambda ctx, e: None, "the step's delay function's answer takes a duration"),
    (lambda ctx, e: -5, "must not be negative"),
])
def test_a_failing_delay_function_fails_the_step_with_no_more_retries(
        any_host: FakeHost, delay: Any, says: str) -> None:
    log: list[int] = []

    def wf(run: Run, _: Any) -> Any:
        r = run.try_step("s", flaky(any_host, log, 99), attempts=5, delay=delay)
        return [r.ok, r.attempts, r.error]

    any_host.serve("w", wf)
    c = any_host.client("w")
    c.start("1")
    drive(any_host, 1000, 10)
    ok, attempts, error = c.status("1").output
    assert (ok, attempts, len(log)) == (False, 1, 1)
    assert says in error and "RuntimeError: failure 1" in error
    assert "no more retries" in error


def test_the_config_sets_every_steps_defaults(any_host: FakeHost) -> None:
    log: list[int] = []

    def wf(run: Run, _: Any) -> Any:
        return run.try_step("s", flaky(any_host, log, 99)).attempts

    any_host.serve("w", wf, Config(limit=2, delay="2 seconds", backoff="linear",
                                   timeout="1 minute"))
    c = any_host.client("w")
    c.start("1")
    drive(any_host, 1000, 20)
    assert c.status("1").output == 3
    assert gaps(log) == [2000, 4000]
    assert any_host.instance("w", "1").backend.deadlines[:2] == [60_000, None]


def test_a_step_option_overrides_the_configs_delay_function(any_host: FakeHost) -> None:
    log: list[int] = []
    any_host.serve("w", lambda wf, _: wf.step("s", flaky(any_host, log, 1), delay="3s"),
                   Config(delay=lambda ctx, e: "1 hour"))
    any_host.client("w").start("1")
    drive(any_host, 1000, 10)
    assert gaps(log) == [3000]


def test_config_durations_and_their_ms_fields() -> None:
    c = Config(limit=2, delay="10s", retention="1 day", timeout="30s")
    assert (c.attempts, c.backoff_ms, c.retention_ms) == (3, 10_000, 86_400_000)
    assert (c.retry.attempts, c.retry.backoff_ms, c.retry.timeout_ms) == (3, 10_000, 30_000)
    assert c.max_bad_runs == 6
    again = dataclasses.replace(c, run_budget_ms=5000)  # the effective fields carry over
    assert (again.attempts, again.retention_ms, again.run_budget_ms) == (3, 86_400_000, 5000)
    assert Config(retention=timedelta(hours=2)).retention_ms == 2 * HOUR
    assert Config().retry.timeout_ms is None and Config().retry.backoff_kind == "exponential"


@pytest.mark.parametrize(("kwargs", "error", "says"), [
    ({"limit": 2, "attempts": 7}, ValueError, "limit or attempts, not both"),
    ({"delay": "1s", "backoff_ms": 5}, ValueError, "delay or backoff_ms, not both"),
    ({"retention": "1 day", "retention_ms": 5}, ValueError, "retention or retention_ms"),
    ({"backoff": "quadratic"}, ValueError, "backoff must be one of"),
    ({"timeout": "soon"}, ValueError, "'timeout'"),
    ({"timeout": 0}, ValueError, "timeout must be more than 0"),
    ({"limit": -1}, ValueError, "'limit' must be 0 or more"),
    ({"delay": "1h30m"}, ValueError, '"90 minutes"'),
    ({"retention": None, "delay": []}, TypeError, "takes a duration"),
    ({"retention": "forever"}, ValueError, "Config retention"),
])
def test_bad_config_values_name_the_setting(kwargs: dict[str, Any], error: type,
                                            says: str) -> None:
    with pytest.raises(error) as caught:
        Config(**kwargs)
    assert says in str(caught.value)


# -- durations in sleeps, waits and branches ---------------------------------------------


def test_sleeps_and_waits_take_durations(any_host: FakeHost) -> None:
    def wf(run: Run, _: Any) -> Any:
        run.sleep("a", "1 minute")
        run.sleep("b", timedelta(seconds=30))
        got = run.wait_for_event("go", timeout="1 hour")
        late = run.wait_for_event("never", timeout_ms=1000)
        positional = run.wait_for_event("never2", "2s")
        return [got, late, positional, run.now()]

    any_host.serve("w", wf)
    c = any_host.client("w")
    c.start("1")
    t0 = any_host.clock.now()
    any_host.run_due()
    any_host.advance(59_999)
    assert c.status("1").state == "waiting"
    any_host.advance(1)
    any_host.advance(30_000)
    c.send_event("1", "go", 7)
    any_host.run_due()
    any_host.advance(1000)
    any_host.advance(2000)
    s = c.status("1")
    assert s.output == [7, None, None, t0 + 93_000]


def test_sleep_until_takes_an_aware_datetime(any_host: FakeHost) -> None:
    t0 = any_host.clock.now()
    when = datetime.fromtimestamp(t0 / 1000, tz=UTC) + timedelta(minutes=5)
    any_host.serve("w", lambda wf, _: wf.sleep_until("then", when) or wf.now())
    c = any_host.client("w")
    c.start("1")
    any_host.run_due()
    assert c.status("1").wake_at == t0 + 300_000
    any_host.advance(300_000)
    assert c.status("1").output == t0 + 300_000


def test_branches_take_durations(any_host: FakeHost) -> None:
    def wf(run: Run, _: Any) -> Any:
        first = run.any([Wait("go", timeout="1 minute"), Sleep("nap", "10 seconds")])
        second = run.any([Wait("go", timeout_ms=5000), Sleep("nap2", "1 hour")])
        return [first.index, second.index, run.now()]

    any_host.serve("w", wf)
    c = any_host.client("w")
    c.start("1")
    t0 = any_host.clock.now()
    any_host.run_due()
    any_host.advance(10_000)
    any_host.advance(5000)
    assert c.status("1").output == [1, 0, t0 + 15_000]


def test_a_step_branch_takes_the_step_options(any_host: FakeHost) -> None:
    log: list[int] = []

    def wf(run: Run, _: Any) -> Any:
        return run.all([Step("s", flaky(any_host, log, 2), limit=2, delay="1s",
                             backoff="constant")])

    any_host.serve("w", wf)
    c = any_host.client("w")
    c.start("1")
    drive(any_host, 500, 20)
    assert c.status("1").output == ["ok"]
    assert gaps(log) == [1000, 1000]


def test_a_compensation_takes_the_step_options(any_host: FakeHost) -> None:
    undo: list[int] = []

    def g() -> None:
        undo.append(any_host.clock.now())
        if len(undo) < 3:
            raise RuntimeError("not yet")

    def wf(run: Run, _: Any) -> Any:
        run.step("reserve", lambda: 1,
                 compensate=Compensation(g, limit=2, delay="2s", backoff="constant"))
        run.fail("then it failed")

    any_host.serve("w", wf)
    c = any_host.client("w")
    c.start("1")
    drive(any_host, 1000, 20)
    s = c.status("1")
    assert s.state == "failed" and "compensated" in (s.error or ""), s
    assert gaps(undo) == [2000, 2000]


# -- bad options: each parks the instance at once, naming it -----------------------------

BAD = [
    ({"backoff_ms": "10s"}, "'backoff_ms' must be a whole number of milliseconds"),
    ({"backoff_ms": "10s"}, "use delay='10s'"),
    ({"timeout_ms": "5s"}, "use timeout='5s'"),
    ({"delay": "1h30m"}, "step option 'delay'"),
    ({"delay": None}, "step option 'delay' takes a duration"),
    ({"delay": "10"}, "has no unit"),
    ({"backoff": "quadratic"}, "backoff must be one of"),
    ({"backoff": 2}, "'backoff' must be \"constant\""),
    ({"limit": -1}, "'limit' must be 0 or more"),
    ({"limit": True}, "'limit' must be a whole number of retries"),
    ({"limit": 2, "attempts": 3}, "'limit' and 'attempts' are one setting"),
    ({"delay": "1s", "backoff_ms": 10}, "'delay' and 'backoff_ms' are one setting"),
    ({"timeout": "1s", "timeout_ms": 10}, "'timeout' and 'timeout_ms' are one setting"),
    ({"timeout": "0s"}, "timeout must be more than 0"),
    ({"timeout": "101 years"}, "longer than 100 years"),
    ({"retries": 3}, "unknown step option(s) 'retries'"),
]


@pytest.mark.parametrize(("opts", "says"), BAD, ids=[str(o) for o, _ in BAD])
def test_a_bad_step_option_parks_the_instance_naming_it(any_host: FakeHost,
                                                        opts: dict[str, Any],
                                                        says: str) -> None:
    ran: list[int] = []
    any_host.serve("w", lambda wf, _: wf.step("s", lambda: ran.append(1), **opts))
    c = any_host.client("w")
    c.start("1")
    any_host.run_due()
    s = c.status("1")
    assert s.state == "parked" and says in (s.error or ""), s.error
    assert "wf.step('s')" in (s.error or "")
    assert ran == []


@pytest.mark.parametrize(("call", "says"), [
    (lambda wf: wf.all([Step("s", lambda: 1, delay="soon")]), "branch 0: step option 'delay'"),
    (lambda wf: wf.all([Sleep("nap", "5 parsecs")]), "sleep 'nap': '5 parsecs'"),
    (lambda wf: wf.all([Wait("go")]), "give one, as timeout="),
    (lambda wf: wf.all([Wait("go", "1s", timeout_ms=5)]), "give one"),
    (lambda wf: wf.wait_for_event("go"), "wf.wait_for_event('go'): the timeout: give one"),
    (lambda wf: wf.wait_for_event("go", "1s", timeout_ms=5), "give one"),
    (lambda wf: wf.wait_for_event("go", timeout_ms="1s"), "must be a number of milli"),
    (lambda wf: wf.sleep("nap", None), "wf.sleep('nap') must be a number of milliseconds"),
    (lambda wf: wf.sleep("nap", "-1s"), "must not be negative"),
    (lambda wf: wf.sleep_until("then", datetime(2030, 1, 1)), "naive datetime"),
    (lambda wf: wf.sleep_until("then", "tomorrow"), "since the Unix epoch or a datetime"),
    (lambda wf: wf.step("s", lambda: 1, compensate=Compensation(lambda: 0, delay="x")),
     "compensate: step option 'delay'"),
])
def test_bad_durations_park_the_instance_naming_the_call(any_host: FakeHost, call: Any,
                                                          says: str) -> None:
    any_host.serve("w", lambda wf, _: call(wf))
    c = any_host.client("w")
    c.start("1")
    any_host.run_due()
    s = c.status("1")
    assert s.state == "parked" and says in (s.error or ""), s.error
