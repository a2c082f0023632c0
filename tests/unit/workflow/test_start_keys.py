"""A start's idempotency key (start_keys.py): sent again, the start answers as the
first did (`created` included) and delivers its event never again; another key is a
start that found the instance."""

from __future__ import annotations

from typing import Any

import pytest
from wkguest.workflow import Config, Run, WorkflowError
from wkguest.workflow.start_keys import MAX_KEY_CHARS
from wkguest.workflow.testing import FakeHost

DAY = 86_400_000


def waiter(wf: Run, inp: Any) -> Any:
    return wf.wait_for_event("go", DAY)


def test_the_same_key_answers_created_again_and_another_does_not(host: FakeHost) -> None:
    host.serve("w", waiter, Config())
    c = host.client("w")
    assert c.start("1", 1, idempotency_key="k-1").created
    assert c.start("1", 1, idempotency_key="k-1").created  # the retry of a lost answer
    assert not c.start("1", 1, idempotency_key="k-2").created
    assert not c.start("1", 1).created


def test_a_signal_with_start_sent_again_delivers_its_event_once(host: FakeHost) -> None:
    host.serve("w", waiter, Config())
    c = host.client("w")
    c.start("1", None)
    first = c.start("1", None, event=("go", "a"), idempotency_key="k-9")
    again = c.start("1", None, event=("go", "a"), idempotency_key="k-9")
    assert (first.created, again.created) == (False, False)
    assert c.status("1").events_pending == 1  # delivered by the first alone
    host.run_due()
    assert c.status("1").output == "a"


def test_a_created_instances_signal_with_start_sent_again_delivers_nothing(
        host: FakeHost) -> None:
    host.serve("w", waiter, Config())
    c = host.client("w")
    assert c.start("1", None, event=("go", "b"), idempotency_key="k-3").created
    assert c.start("1", None, event=("go", "b"), idempotency_key="k-3").created
    assert c.status("1").events_pending == 1


@pytest.mark.parametrize("key", ["", "x" * (MAX_KEY_CHARS + 1), "bad\nkey", 7])
def test_a_bad_key_is_refused_and_nothing_started(host: FakeHost, raw: Any, key: Any) -> None:
    host.serve("w", waiter, Config())
    status, answer = raw("w")("1", "start", {"input": None, "idempotency_key": key})
    assert (status, answer["error"]) == (400, "bad-request"), answer
    with pytest.raises(WorkflowError) as e:
        host.client("w").status("1")
    assert e.value.kind == "unknown"
