"""A workflow class that goes wrong in the ways an operator must be able to see, for
tests/e2e/test_seeing_failures.py: its input says how.

    {"flaky": N}     step 'charge' fails N times (a ConnectionError raised in
                     `_call_bank`), then returns "charged"; 3 attempts, 1 s apart
    {"broken": true} step 'charge' fails every time: after 3 attempts the workflow fails
    {"body": true}   the workflow function itself divides by zero, outside any step: each
                     run is a bad run (1 s apart), and the second in a row parks it
"""

from __future__ import annotations

from typing import Any

from wkguest import workflow


def _call_bank(tries: int, fail_first: int) -> str:
    if tries <= fail_first:
        raise ConnectionError(f"the bank refused attempt {tries}")
    return "charged"


def _charge(wf: workflow.Run, fail_first: int) -> str:
    def attempt() -> str:
        return _call_bank(wf.step_context.attempt, fail_first)

    return wf.step("charge", attempt, attempts=3, backoff_ms=1000)


def order(wf: workflow.Run, inp: Any) -> Any:
    if inp.get("body"):
        return {"total": 1 / 0}
    fail_first = 1_000 if inp.get("broken") else int(inp.get("flaky", 0))
    return {"charge": _charge(wf, fail_first)}


Handler = workflow.serve(order, workflow.Config(retention_ms=3_600_000, attempts=1,
                                                backoff_ms=1000))
