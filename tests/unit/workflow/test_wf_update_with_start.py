"""Update-with-start (start_route.py): a start that carries an update creates the
instance with the update accepted in one transaction, after the new instance's dry
replay found the handler and its validator let it through; a refusal leaves neither.
Found running, the update is delivered as the update route delivers it."""

from __future__ import annotations

from typing import Any

import pytest
from wkguest.workflow import Config, Run, WorkflowError
from wkguest.workflow.testing import FakeHost

DAY = 86_400_000


def counter(wf: Run, inp: Any) -> Any:
    total = [inp or 0]

    def add(n: Any) -> int:
        total[0] += n
        return total[0]

    def positive(n: Any) -> None:
        if not isinstance(n, int) or n <= 0:
            raise ValueError("give a positive int")

    wf.on_update("add", add, positive)
    wf.wait_for_event("close", DAY)
    return total[0]


def test_a_start_with_an_update_creates_it_and_the_update_is_taken(host: FakeHost) -> None:
    host.serve("k", counter, Config())
    c = host.client("k")
    st = c.start("1", 10, update=("add", 5), update_id="a1")
    assert st.created and st.update is not None
    assert (st.update.id, st.update.state) == ("a1", "accepted")
    host.run_due()
    assert c.update_status("1", "a1").value() == 15
    again = c.start("1", 10, update=("add", 5), update_id="a1")  # a retry: the same one
    assert not again.created and again.update is not None and again.update.value() == 15
    st = c.start("1", 10, update=("add", 1))
    host.run_due()
    assert c.update_status("1", st.update.id).value() == 16  # type: ignore[union-attr]


def test_a_refused_update_leaves_no_instance(host: FakeHost) -> None:
    host.serve("k", counter, Config())
    c = host.client("k")
    for update in (("add", -1), ("nope", 1)):
        with pytest.raises(WorkflowError) as e:
            c.start("1", 10, update=update)
        assert e.value.kind in ("update-rejected", "no-update")
        with pytest.raises(WorkflowError) as e:
            c.status("1")
        assert e.value.kind == "unknown"


def test_a_start_with_an_update_and_an_event_is_refused(host: FakeHost) -> None:
    host.serve("k", counter, Config())
    c = host.client("k")
    with pytest.raises(WorkflowError) as e:
        c.start("1", 10, update=("add", 1), event=("close", None))
    assert e.value.status == 400 and "not both" in e.value.message


def test_a_finished_instance_refuses_an_update_with_start(host: FakeHost) -> None:
    host.serve("k", counter, Config())
    c = host.client("k")
    c.start("1", 10)
    host.run_due()
    c.send_event("1", "close")
    host.run_due()
    with pytest.raises(WorkflowError) as e:
        c.start("1", 10, update=("add", 1))
    assert e.value.kind == "finished"
