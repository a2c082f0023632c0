"""Retries by failure type, on CPython and, through the switch, in the sandbox (the real
component): tests/guests/kit_retry_types.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from wkhost.testkit import Kit, WorkflowClass

GUEST = Path(__file__).resolve().parents[2] / "tests" / "guests" / "kit_retry_types.py"


@pytest.fixture(scope="module", params=["cpython", pytest.param("sandbox",
                                                                  marks=pytest.mark.e2e)])
def kit(request: pytest.FixtureRequest) -> Iterator[Kit]:
    kit = Kit(sandbox=request.param == "sandbox")
    kit.serve_workflow("retries", GUEST)
    try:
        yield kit
    finally:
        kit.close()


def test_a_step_retries_only_the_types_it_names(kit: Kit) -> None:
    wf = WorkflowClass(kit, "retries").instance("r1")
    wf.start()
    st = wf.wait_for_status("completed")
    assert st.output == [
        [True, "paid", None, 0],
        [False, None, "ValueError: the card number is malformed (not retried: ValueError "
         "is not in the step's retry_on)", 1],
        [False, None, "PermissionError: the card is blocked (not retried: PermissionError "
         "is in the step's no_retry_on)", 1]]
    assert sorted(wf.sql("SELECT name, n FROM tries")) == [
        ("flaky", 3), ("refused", 1), ("wrong", 1)]
    flaky = wf.step("flaky")
    assert [a.outcome for a in flaky.history] == ["failed", "failed", "returned"]
