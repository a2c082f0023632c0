"""Debounce (debounce.py): starts of one id with a window begin the instance once the
window has passed with no newer one, with the newest input; a start without a window,
or after the first run began, finds it as any start does."""

from __future__ import annotations

from typing import Any

import pytest
from wkguest.workflow import Config, Run, WorkflowError
from wkguest.workflow.testing import FakeHost

RAN: list[Any] = []


def digest(wf: Run, inp: Any) -> Any:
    return wf.step("send", lambda: RAN.append(inp) or inp)


@pytest.fixture(autouse=True)
def _clear() -> None:
    RAN.clear()


def test_five_starts_in_a_window_run_once_with_the_last_input(any_host: FakeHost) -> None:
    any_host.serve("d", digest, Config())
    c = any_host.client("d")
    first = c.start("u-1", 1, debounce="10s")
    assert first.created and first.state == "running"
    for i in range(2, 6):
        any_host.advance(4_000)  # each inside the window the one before opened
        assert not c.start("u-1", i, debounce="10s").created
    assert RAN == [] and c.status("u-1").wake_at is not None
    any_host.advance(9_000)
    assert RAN == [] and c.status("u-1").state == "running"
    any_host.advance(2_000)
    assert RAN == [5] and c.status("u-1").output == 5


def test_a_start_after_the_first_run_began_changes_nothing(any_host: FakeHost) -> None:
    any_host.serve("d", digest, Config())
    c = any_host.client("d")
    c.start("u-1", 1, debounce=1000)
    any_host.advance(1_000)
    again = c.start("u-1", 2, debounce=1000)
    assert not again.created and again.output == 1 and RAN == [1]


def test_a_plain_start_leaves_a_debouncing_instance_debouncing(any_host: FakeHost) -> None:
    any_host.serve("d", digest, Config())
    c = any_host.client("d")
    c.start("u-1", 1, debounce=5000)
    assert not c.start("u-1", 9).created
    any_host.run_due()
    assert RAN == []
    any_host.advance(5_000)
    assert RAN == [1]


@pytest.mark.parametrize("msg", [{"debounce_ms": 0}, {"debounce_ms": -5},
                                 {"debounce_ms": 31 * 86_400_000}, {"debounce_ms": "1s"},
                                 {"debounce_ms": 10, "event": {"name": "e"}}])
def test_a_bad_window_is_refused_and_nothing_started(host: FakeHost, raw: Any,
                                                     msg: dict[str, Any]) -> None:
    host.serve("d", digest, Config())
    status, answer = raw("d")("1", "start", {"input": 1, **msg})
    assert (status, answer["error"]) == (400, "bad-request"), answer
    with pytest.raises(WorkflowError):
        host.client("d").status("1")


def test_each_folded_start_is_counted(host: FakeHost) -> None:
    host.serve("d", digest, Config())
    c = host.client("d")
    for i in range(3):
        c.start("u-1", i, debounce=1000)
    folded = [n for _, n, _, _ in host.instance("d", "u-1").backend.counted
              if n == "workflow_debounced"]
    assert len(folded) == 2
