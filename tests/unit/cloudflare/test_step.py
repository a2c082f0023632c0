"""step.do (wkguest.cloudflare.step and config): fn with and without the step context,
each config key and its default, the dynamic delay, NonRetryableError, a step out of
retries, and each bad config failing at once, named. FakeHost, both replay modes."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from wkguest.cloudflare import (
    NonRetryableError,
    WorkflowEntrypoint,
    WorkflowEvent,
    WorkflowStep,
)
from wkguest.workflow import StepFailed
from wkguest.workflow.testing import FakeHost

from .conftest import SECOND, Serve, backend, journal

CALLS: Counter[str] = Counter()
SEEN: list[Any] = []


@pytest.fixture(autouse=True)
def _reset() -> None:
    CALLS.clear()
    SEEN.clear()


def failing(name: str, times: int = 1_000) -> Any:
    """A step function failing its first `times` attempts, then returning its count."""
    def f() -> int:
        CALLS[name] += 1
        if CALLS[name] <= times:
            raise ConnectionError(f"{name} down")
        return CALLS[name]
    return f


class Configured(WorkflowEntrypoint):
    """One step, its config the instance's params (None: the defaults)."""

    def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        config, times = event.payload
        if config is None:
            return step.do("work", failing("work", times))
        return step.do("work", config, failing("work", times))


def waits(host: FakeHost, id: str, n: int) -> list[int]:
    """The wait before each of the next `n` attempts (the alarm the failed one left)."""
    host.run_due()
    gaps = []
    for _ in range(n):
        gap = backend(host, id).alarm - host.clock.now()  # type: ignore[operator]
        gaps.append(gap)
        host.advance(gap)
    return gaps


def test_the_defaults_are_cloudflares(any_host: FakeHost, serve: Serve) -> None:
    inst = serve(Configured).create(id="d", params=[None, 1_000])
    # limit 5: five retries after the first attempt; 10 s, exponential
    assert waits(any_host, "d", 5) == [10 * SECOND, 20 * SECOND, 40 * SECOND,
                                       80 * SECOND, 160 * SECOND]
    s = inst.status()
    assert (s.status, CALLS["work"]) == ("errored", 6)
    assert s.error == "step 'work' failed after 6 attempt(s): ConnectionError: work down"


@pytest.mark.parametrize(("retries", "gaps"), [
    ({"limit": 3, "delay": "2 seconds", "backoff": "constant"}, [2000, 2000, 2000]),
    ({"limit": 3, "delay": "2 seconds", "backoff": "linear"}, [2000, 4000, 6000]),
    ({"limit": 3, "delay": 2000, "backoff": "exponential"}, [2000, 4000, 8000]),
    ({"limit": 3, "delay": "1 second"}, [1000, 2000, 4000]),  # exponential by default
    ({"limit": 2}, [10_000, 20_000]),  # the default delay
    ({"delay": "5m", "backoff": "constant"}, [300_000] * 5),  # the default limit
])
def test_each_retries_key(any_host: FakeHost, serve: Serve, retries: dict[str, Any],
                          gaps: list[int]) -> None:
    inst = serve(Configured).create(id="r", params=[{"retries": retries}, 1_000])
    assert waits(any_host, "r", len(gaps)) == gaps
    assert inst.status().status == "errored"
    assert CALLS["work"] == len(gaps) + 1


def test_limit_zero_is_one_attempt(any_host: FakeHost, serve: Serve) -> None:
    inst = serve(Configured).create(id="z", params=[{"retries": {"limit": 0}}, 1_000])
    any_host.run_due()
    assert (inst.status().status, CALLS["work"]) == ("errored", 1)


def test_a_step_that_succeeds_on_a_retry_returns_its_value(any_host: FakeHost,
                                                           serve: Serve) -> None:
    inst = serve(Configured).create(id="ok", params=[{"retries": {"limit": 3}}, 2])
    assert waits(any_host, "ok", 2) == [10_000, 20_000]
    assert inst.status().output == 3
    assert [r[1:] for r in journal(any_host, "ok")] == [("S", "work", 3)]


def test_the_timeout_bounds_each_attempt(any_host: FakeHost, serve: Serve) -> None:
    inst = serve(Configured).create(id="t", params=[{"timeout": "30 seconds"}, 0])
    any_host.run_due()
    assert inst.status().output == 1
    assert backend(any_host, "t").deadlines == [30_000, None]


def test_no_timeout_by_default(any_host: FakeHost, serve: Serve) -> None:
    serve(Configured).create(id="t", params=[None, 0])
    any_host.run_due()
    assert backend(any_host, "t").deadlines == []


class Dynamic(WorkflowEntrypoint):
    def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        def delay(ctx: Any, error: Exception) -> Any:
            SEEN.append((ctx.attempt, ctx.step.name, ctx.step.count, str(error)))
            return f"{ctx.attempt} seconds"

        return step.do("call", {"retries": {"limit": 3, "delay": delay,
                                            "backoff": "constant"}}, failing("call", 3))


def test_a_delay_function_gets_the_context_and_the_error(any_host: FakeHost,
                                                         serve: Serve) -> None:
    inst = serve(Dynamic).create(id="dyn")
    assert waits(any_host, "dyn", 3) == [1000, 2000, 3000]
    assert inst.status().output == 4
    want = [(n, "call", 1, "call down") for n in (1, 2, 3)]
    assert want == SEEN


class Contexts(WorkflowEntrypoint):
    def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        out = []
        for first in range(3):
            out.append(step.do("page", lambda ctx: [ctx.step.name, ctx.step.count,
                                                    ctx.attempt]))
            out.append(step.do("plain", lambda first=first: first))  # a default: no ctx
        out.append(step.do("cfg", {"retries": {"limit": 1}, "timeout": "1 minute"},
                           lambda ctx: ctx.config))
        out.append(step.do("again", {"retries": {"delay": 1}}, failing_ctx))
        return out


def failing_ctx(ctx: Any) -> int:
    if ctx.attempt < 3:
        raise RuntimeError("not yet")
    return int(ctx.attempt)


def test_the_step_context_and_fn_without_one(any_host: FakeHost, serve: Serve) -> None:
    inst = serve(Contexts).create(id="c")
    any_host.run_due()
    any_host.advance(1)
    any_host.advance(2)
    assert inst.status().output == [
        ["page", 1, 1], 0, ["page", 2, 1], 1, ["page", 3, 1], 2,
        {"retries": {"limit": 1, "delay": "10 seconds", "backoff": "exponential"},
         "timeout": "1 minute"},
        3,
    ]


class Rejects(WorkflowEntrypoint):
    def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        def reject() -> None:
            CALLS["reject"] += 1
            raise NonRetryableError("bad input")

        if event.payload == "caught":
            try:
                step.do("check", reject)
            except StepFailed as e:
                error = e.error
                return step.do("after", lambda: f"handled: {error}")
        step.do("check", reject)


def test_non_retryable_fails_the_step_at_once_and_then_the_instance(
        any_host: FakeHost, serve: Serve) -> None:
    inst = serve(Rejects).create(id="n")
    any_host.run_due()
    s = inst.status()
    assert (s.status, CALLS["reject"]) == ("errored", 1)
    assert s.error == "step 'check' failed after 1 attempt(s): bad input"


def test_a_failed_step_caught_in_run_may_go_on(any_host: FakeHost, serve: Serve) -> None:
    inst = serve(Rejects).create(id="n", params="caught")
    any_host.run_due()
    assert inst.status().output == "handled: bad input"


class Bad(WorkflowEntrypoint):
    def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        args = event.payload
        if args == "no fn":
            return step.do("x")  # type: ignore[call-arg]
        if args == "two args":
            return step.do("x", None, lambda a, b: 1, 5)
        if args == "not callable":
            return step.do("x", 5)
        if args == "fn takes two":
            return step.do("x", lambda a, b: 1)
        return step.do("x", args, lambda: 1)


@pytest.mark.parametrize(("config", "error"), [
    ({"retry": {"limit": 1}}, "step.do('x'): the config: unknown key(s) 'retry'; the keys "
                              "are retries, timeout"),
    ({"retries": {"limits": 1, "delay": 1}}, "step.do('x'): the config: 'retries': unknown "
                                             "key(s) 'limits'; the keys are limit, delay"),
    ({"retries": 3}, "'retries' must be a dict"),
    ("10 seconds", "step.do('x'): the config must be a dict"),
    ({"retries": {"limit": -1}}, "step.do('x'): step option 'limit'"),
    ({"retries": {"limit": "3"}}, "step.do('x'): step option 'limit'"),
    ({"retries": {"backoff": "quadratic"}}, "step.do('x'): step option backoff must be one"),
    ({"retries": {"delay": "10 parsecs"}}, "step.do('x'): step option 'delay': '10 parsecs'"),
    ({"timeout": "soon"}, "step.do('x'): step option 'timeout': 'soon' is not a duration"),
    ("no fn", "step.do('x') takes (name, fn) or (name, config, fn), not 1"),
    ("two args", "step.do('x') takes (name, fn) or (name, config, fn), not 4"),
    ("not callable", "step.do('x'): the step's function must be callable"),
    ("fn takes two", "step.do('x'): the step's function takes at most one argument"),
])
def test_a_bad_config_parks_the_instance_at_once_naming_it(
        any_host: FakeHost, serve: Serve, config: Any, error: str) -> None:
    inst = serve(Bad).create(id="b", params=config)
    any_host.run_due()
    s = inst.status()
    assert (s.status, s.state) == ("errored", "parked")
    assert s.error is not None and error in s.error, s.error
