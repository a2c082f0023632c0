"""Retries by failure type: a step's `retry_on` and `no_retry_on` (policy.py)."""

from __future__ import annotations

from typing import Any

import pytest
from wkguest.workflow import Run
from wkguest.workflow.core.policy import override
from wkguest.workflow.core.retry import Retry
from wkguest.workflow.testing import FakeHost


class Busy(ConnectionError):
    pass


def raising(*errors: Exception) -> Any:
    """A step function that raises each of `errors` in turn, then returns "ok"."""
    left = list(errors)

    def f() -> Any:
        if left:
            raise left.pop(0)
        return "ok"
    return f


def outcome(host: FakeHost, f: Any, **opts: Any) -> list[Any]:
    def wf(run: Run, _: Any) -> Any:
        r = run.try_step("s", f, backoff_ms=10, **opts)
        return [r.ok, r.value, r.error, r.attempts]

    host.serve("w", wf)
    c = host.client("w")
    c.start("1")
    for _ in range(10):
        host.advance(10)
    st = c.status("1")
    assert st.state == "completed", st
    return list(st.output)


def test_retry_on_retries_its_types_and_their_subclasses(host: FakeHost) -> None:
    got = outcome(host, raising(ConnectionError("down"), Busy("busy")),
                  retry_on=ConnectionError)
    assert got == [True, "ok", None, 0]


def test_a_type_retry_on_does_not_name_fails_the_step_at_once(host: FakeHost) -> None:
    got = outcome(host, raising(ConnectionError("down"), ValueError("bad card")),
                  retry_on=(ConnectionError, TimeoutError))
    assert got == [False, None, "ValueError: bad card (not retried: ValueError is not in "
                   "the step's retry_on)", 2]


def test_no_retry_on_fails_the_step_at_once(host: FakeHost) -> None:
    got = outcome(host, raising(Busy("busy"), KeyError("x")), no_retry_on=[KeyError])
    assert got == [False, None, "KeyError: 'x' (not retried: KeyError is in the step's "
                   "no_retry_on)", 2]


def test_no_retry_on_wins_over_retry_on(host: FakeHost) -> None:
    got = outcome(host, raising(Busy("busy")), retry_on=ConnectionError, no_retry_on=Busy)
    assert got == [False, None, "Busy: busy (not retried: Busy is in the step's "
                   "no_retry_on)", 1]


def test_a_timed_out_attempt_is_retried_whatever_retry_on_says(host: FakeHost) -> None:
    calls: list[int] = []

    def slow() -> Any:
        calls.append(1)
        if len(calls) == 1:
            host.clock.jump(50)  # past the timeout: the attempt timed out
        return "ok"

    assert outcome(host, slow, retry_on=KeyError, timeout_ms=20) == [True, "ok", None, 0]


@pytest.mark.parametrize("value", [int, "ValueError", (ValueError, 3), BaseException])
def test_a_bad_type_names_the_option(value: Any) -> None:
    with pytest.raises(TypeError, match="'retry_on' takes an exception class"):
        override(Retry(), {"retry_on": value})


def test_a_bad_type_parks_the_instance_naming_it(host: FakeHost) -> None:
    host.serve("w", lambda run, _: run.step("s", lambda: 1, no_retry_on="oops"))
    c = host.client("w")
    c.start("1")
    host.run_due()
    st = c.status("1")
    assert st.state == "parked" and "'no_retry_on' takes an exception class" in (st.error or "")
