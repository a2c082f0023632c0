"""A child's start call that the host refuses is told by the error's kind, never by its
words (children/calls.py): a class that does not declare the workflow protocol
("not-declared") fails the start at once, with no more attempts; any other failure,
whatever its text says, is retried under the start's attempts."""

from __future__ import annotations

from typing import Any

import pytest
from wkguest.errors import CallErrorKind
from wkguest.workflow import Config, Run
from wkguest.workflow.backend import CallFailed
from wkguest.workflow.testing import FakeHost

REFUSAL = ("error: class 'plain' does not declare the protocol 'wk-workflow/v1' "
           "(it declares none); nothing was run")


def parent(wf: Run, inp: Any) -> Any:
    return wf.child("plain", "k-1", None)


def started_against(host: FakeHost, kind: CallErrorKind) -> list[str]:
    """Start a parent whose calls fail with REFUSAL of `kind`; run it out. The calls."""
    calls: list[str] = []

    def refuse(cls: str, id: str, method: str, path: str, body: bytes) -> tuple[int, bytes]:
        calls.append(f"{cls}/{id} {path}")
        raise CallFailed(REFUSAL, kind)

    host.serve("parent", parent, Config(attempts=3, backoff_ms=100))
    c = host.client("parent")
    c.start("p-1", None)
    host.instance("parent", "p-1").backend.caller = refuse
    host.run_due()
    for _ in range(3):
        host.advance(1000)
    return calls


def test_a_class_that_does_not_declare_the_protocol_fails_the_start_at_once(
        any_host: FakeHost) -> None:
    calls = started_against(any_host, "not-declared")
    assert calls == ["plain/k-1 /wk-workflow/v1/start"]
    st = any_host.client("parent").status("p-1")
    assert st.state == "failed"
    assert st.error.startswith("child plain/k-1 not started: "), st.error
    assert f"class 'plain' is not a workflow class ({REFUSAL})" in st.error


@pytest.mark.parametrize("kind", ["refused", "other"])
def test_another_failure_reading_the_same_is_retried(any_host: FakeHost,
                                                     kind: CallErrorKind) -> None:
    calls = started_against(any_host, kind)
    assert len(calls) == 3  # every attempt
    st = any_host.client("parent").status("p-1")
    assert st.state == "failed" and "is not a workflow class" not in st.error, st.error
    assert REFUSAL in st.error
