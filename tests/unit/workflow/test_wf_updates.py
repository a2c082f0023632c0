"""Updates: `wf.on_update(name, handler, validator)` and `Client.update`: accepted after
a dry replay finds the handler and its validator lets it through, taken by the next run
at its next new position (a sleep or a wait displaced and put back), its handler's
steps recorded between its two entries, and its outcome answered by id."""

from __future__ import annotations

from typing import Any

import pytest
from wkguest.workflow import Config, Run, WorkflowError
from wkguest.workflow.testing import FakeHost

DAY = 86_400_000
RAN: list[str] = []


def cart(wf: Run, inp: Any) -> Any:
    items: list[str] = []

    def add(sku: Any) -> int:
        price = wf.step(f"price {sku}", lambda: RAN.append(sku) or len(sku))
        items.append(sku)
        return price

    def check(sku: Any) -> None:
        if not isinstance(sku, str):
            raise ValueError("a sku is text")
        if sku in items:
            raise ValueError(f"{sku} is in the cart already")

    wf.on_update("add", add, check)
    wf.on_update("boom", lambda arg: 1 / 0)
    wf.query("items", lambda _: list(items))
    wf.step("open", lambda: RAN.append("open"))
    got = wf.wait_for_event("checkout", DAY)
    wf.step("charge", lambda: RAN.append("charge"))
    return {"items": items, "by": got}


@pytest.fixture(autouse=True)
def _clear() -> None:
    RAN.clear()


def started(host: FakeHost) -> Any:
    host.serve("c", cart, Config())
    c = host.client("c")
    c.start("1")
    host.run_due()
    return c


def test_an_update_is_taken_while_the_workflow_waits_and_answers_its_result(
        any_host: FakeHost) -> None:
    c = started(any_host)
    u = c.update("1", "add", "abc", update_id="u1")
    assert (u.id, u.state) == ("u1", "accepted")
    assert c.status("1").updates_pending == 1
    any_host.run_due()
    u = c.update_status("1", "u1")
    assert (u.state, u.value(), u.position) == ("completed", 3, 1)
    assert c.query("1", "items") == ["abc"]
    assert RAN == ["open", "abc"] and c.status("1").updates_pending == 0
    # the wait it displaced is still there, with its deadline: the event ends it
    c.send_event("1", "checkout", "ann")
    any_host.run_due()
    st = c.status("1")
    assert st.output == {"items": ["abc"], "by": "ann"}
    assert RAN == ["open", "abc", "charge"]


def test_the_same_id_again_records_nothing_and_answers_the_same(any_host: FakeHost) -> None:
    c = started(any_host)
    c.update("1", "add", "abc", update_id="u1")
    c.update("1", "add", "abc", update_id="u1")
    any_host.run_due()
    assert c.update("1", "add", "abc", update_id="u1").value() == 3
    assert RAN == ["open", "abc"]
    with pytest.raises(WorkflowError) as e:
        c.update("1", "boom", None, update_id="u1")
    assert e.value.status == 409


def test_a_validator_refuses_before_anything_is_recorded(any_host: FakeHost) -> None:
    c = started(any_host)
    before = c.status("1")
    for arg in (7, None):
        with pytest.raises(WorkflowError) as e:
            c.update("1", "add", arg, update_id="bad")
        assert e.value.kind == "update-rejected" and "a sku is text" in e.value.message
    with pytest.raises(WorkflowError) as e:
        c.update_status("1", "bad")
    assert e.value.status == 404
    assert c.status("1") == before
    c.update("1", "add", "x")
    any_host.run_due()
    with pytest.raises(WorkflowError) as e:  # the state the validator sees is the taken one
        c.update("1", "add", "x")
    assert "in the cart already" in e.value.message


def test_an_unknown_update_name_is_refused(any_host: FakeHost) -> None:
    c = started(any_host)
    with pytest.raises(WorkflowError) as e:
        c.update("1", "remove", "abc")
    assert e.value.kind == "no-update" and "add, boom" in e.value.message


def test_a_handler_that_raises_fails_the_update_not_the_workflow(any_host: FakeHost) -> None:
    c = started(any_host)
    u = c.update("1", "boom")
    any_host.run_due()
    u = c.update_status("1", u.id)
    assert u.state == "failed" and "ZeroDivisionError" in (u.error or "")
    with pytest.raises(WorkflowError) as e:
        u.value()
    assert e.value.kind == "update-failed"
    assert c.status("1").state == "waiting"


def test_updates_replay_their_handlers_and_a_fresh_cache_rebuilds_the_state(
        any_host: FakeHost) -> None:
    c = started(any_host)
    for sku in ("a", "bb", "ccc"):
        c.update("1", "add", sku)
    any_host.run_due()
    assert c.query("1", "items") == ["a", "bb", "ccc"]
    any_host.instance("c", "1").runner.forget()  # a cold load replays every handler
    assert c.query("1", "items") == ["a", "bb", "ccc"]
    c.send_event("1", "checkout", "bo")
    any_host.run_due()
    assert c.status("1").output == {"items": ["a", "bb", "ccc"], "by": "bo"}
    assert RAN == ["open", "a", "bb", "ccc", "charge"]


def test_an_update_to_a_finished_instance_is_refused_and_a_waiting_one_fails(
        any_host: FakeHost) -> None:
    c = started(any_host)
    u = c.update("1", "add", "abc")
    c.cancel("1")
    assert c.update_status("1", u.id).state == "failed"
    assert "finished (cancelled) before it took it" in (c.update_status("1", u.id).error or "")
    with pytest.raises(WorkflowError) as e:
        c.update("1", "add", "x")
    assert e.value.kind == "finished"


def test_a_validator_runs_read_only(any_host: FakeHost) -> None:
    """The validator runs in wkguest.readonly's block, as a query handler does: a change
    it asks for is refused (on a host, the event is marked read-only too: the block's
    own tests and tests/e2e/test_updates.py's accepted update after the mark)."""
    from wkguest import readonly

    def flow(wf: Run, inp: Any) -> Any:
        wf.on_update("poke", lambda arg: arg, lambda arg: readonly.refuse("an HTTP fetch"))
        return wf.wait_for_event("never", DAY)

    any_host.serve("p", flow, Config())
    c = any_host.client("p")
    c.start("1")
    any_host.run_due()
    with pytest.raises(WorkflowError) as e:
        c.update("1", "poke", 1)
    assert e.value.kind == "update-rejected"
    assert "the validator of update 'poke' may only read" in e.value.message
    assert c.status("1").updates_pending == 0


def test_updates_are_counted_once_each_as_accepted_and_as_ended(host: FakeHost) -> None:
    c = started(host)
    c.update("1", "add", "abc")
    c.update("1", "boom")
    host.run_due()
    backend = host.instance("c", "1").backend
    host.instance("c", "1").runner.forget()  # a replay counts nothing again
    c.query("1", "items")
    outcomes = [labels["outcome"] for kind, name, labels, _ in backend.counted
                if name == "workflow_updates"]
    assert sorted(outcomes) == ["accepted", "accepted", "completed", "failed"]
