"""The status route's `input` request key: the instance's input, asked for (an operator's
console shows it), and only then; after a continue-as-new, the current run's input."""

from __future__ import annotations

from typing import Any

from wkguest.workflow import Run
from wkguest.workflow.testing import FakeHost

from .conftest import Raw


def test_the_input_comes_back_when_asked(any_host: FakeHost) -> None:
    any_host.serve("w", lambda wf, inp: wf.wait_for_event("go", "1 day"))
    any_host.client("w").start("1", {"item": "book", "n": 2, "raw": b"\x00\xff"})
    any_host.run_due()
    status, m = Raw(any_host, "w")("1", "status", {"input": True})
    assert status == 200 and m["input"] == {"item": "book", "n": 2, "raw": b"\x00\xff"}
    status, plain = Raw(any_host, "w")("1", "status", {})
    assert status == 200 and "input" not in plain  # not asked: the map stays as it was


def test_after_a_continue_as_new_it_is_the_new_runs(any_host: FakeHost) -> None:
    def flow(wf: Run, inp: Any) -> Any:
        if inp < 2:
            wf.continue_as_new(inp + 1)
        return wf.wait_for_event("go", "1 day")

    any_host.serve("w", flow)
    any_host.client("w").start("1", 0)
    for _ in range(3):
        any_host.run_due()
    _, m = Raw(any_host, "w")("1", "status", {"input": True})
    assert m["input"] == 2 and m["runs"] == 3, m
