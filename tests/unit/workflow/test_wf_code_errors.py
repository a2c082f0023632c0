"""Mistakes in the workflow's code that the runner refuses (CodeError): an unknown or
ill-typed step option, a negative or non-finite duration. Each parks the instance in its
first run, with a message that names the primitive and the option; nothing is retried,
and the step's function never runs."""

from __future__ import annotations

from typing import Any

import pytest
from wkguest.workflow import Run
from wkguest.workflow.testing import FakeHost

CASES = [
    (lambda run, f: run.step("charge", f, timeout_secs=10), "'timeout_secs'"),
    (lambda run, f: run.step("charge", f, backoff_ms="10s"), "'backoff_ms' must be a whole"),
    (lambda run, f: run.step("charge", f, attempts=0), "attempts must be at least 1"),
    (lambda run, f: run.step("charge", f, attempts=True), "'attempts' must be a whole"),
    (lambda run, f: run.try_step("charge", f, factor=0.5), "factor must be at least 1"),
    (lambda run, f: run.step_keyed("charge", lambda k: f(), max_backoff_ms=-1),
     "must be >= 0"),
    (lambda run, f: run.sleep("nap", -5000), "wf.sleep('nap') must be 0 or more"),
    (lambda run, f: run.sleep("nap", "5 parsecs"), "wf.sleep('nap'): '5 parsecs' has an unknown"),
    (lambda run, f: run.sleep("nap", float("inf")), "must be 0 or more"),
    (lambda run, f: run.sleep_until("then", -1), "wf.sleep_until('then')"),
    (lambda run, f: run.wait_for_event("approved", -1), "wf.wait_for_event('approved')"),
]


@pytest.mark.parametrize("call, named", CASES)
def test_a_mistake_parks_the_instance_at_once_naming_it(
        any_host: FakeHost, call: Any, named: str) -> None:
    ran: list[int] = []

    def wf(run: Run, _: Any) -> Any:
        call(run, lambda: ran.append(1))
        return "unreachable"

    any_host.serve("w", wf)
    c = any_host.client("w")
    c.start("1")
    any_host.run_due()
    s = c.status("1")
    assert s.state == "parked", s
    assert named in (s.error or ""), s.error
    assert ran == []
    assert any_host.instance("w", "1").backend.rows(
        "SELECT count(*) FROM _wk_wf_step")[0][0] == 0


def test_a_mistake_caught_by_the_code_still_parks_it(host: FakeHost) -> None:
    """CodeError is a signal: an `except Exception` around the call cannot swallow it."""
    def wf(run: Run, _: Any) -> Any:
        try:
            run.step("charge", lambda: 1, timeout_secs=10)
        except Exception:
            return "swallowed"
        return "unreachable"

    host.serve("w", wf)
    c = host.client("w")
    c.start("1")
    host.run_due()
    s = c.status("1")
    assert s.state == "parked" and "timeout_secs" in (s.error or ""), s


def test_good_options_of_every_type_are_taken(host: FakeHost) -> None:
    def wf(run: Run, _: Any) -> Any:
        return run.step("ok", lambda: 7, attempts=2, backoff_ms=0, factor=1.5,
                        max_backoff_ms=10) + run.step("two", lambda: 1, factor=2)

    host.serve("w", wf)
    c = host.client("w")
    c.start("1")
    host.run_due()
    assert c.status("1").output == 8
