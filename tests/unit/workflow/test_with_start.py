"""Signal-with-start: a start that carries an event (with_start.py), over the FakeHost."""

from __future__ import annotations

from typing import Any

import pytest
from wkguest.workflow import Run, WorkflowError
from wkguest.workflow.testing import FakeHost

DAY = 86_400_000


def cart(wf: Run, inp: Any) -> Any:
    items = [wf.wait_for_event("add", DAY)]
    items.append(wf.wait_for_event("add", DAY))
    return {"owner": inp, "items": items}


def test_a_start_with_an_event_creates_and_delivers(any_host: FakeHost) -> None:
    any_host.serve("carts", cart)
    c = any_host.client("carts")
    st = c.start("c1", "ann", event=("add", "book"))
    assert st.created
    any_host.run_due()
    st = c.start("c1", "ann", event=("add", "pen"))  # found running: delivered
    assert not st.created
    any_host.run_due()
    assert c.status("c1").output == {"owner": "ann", "items": ["book", "pen"]}


def test_a_finished_instance_takes_no_event(any_host: FakeHost) -> None:
    any_host.serve("carts", cart)
    c = any_host.client("carts")
    c.start("c1", "ann", event=("add", "book"))
    c.send_event("c1", "add", "pen")
    any_host.run_due()
    with pytest.raises(WorkflowError) as e:
        c.start("c1", "ann", event=("add", "cup"))
    assert e.value.kind == "finished"
    assert c.status("c1").output["items"] == ["book", "pen"]


@pytest.mark.parametrize("event", [{"name": ""}, "add", {"name": "x\x00"}])
def test_a_bad_event_is_refused_and_nothing_is_left(any_host: FakeHost, event: Any) -> None:
    any_host.serve("carts", cart)
    c = any_host.client("carts")
    with pytest.raises(WorkflowError) as e:
        c._call("c9", "start", {"input": 1, "event": event})  # noqa: SLF001 (raw map)
    assert e.value.kind == "refused" and "'event'" in str(e.value)
    assert ("carts", "c9") not in any_host.instances
