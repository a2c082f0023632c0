"""Child workflows and cancels, and the child-done route, in both replay modes.

A cancelled parent cancels its children that are neither detached nor done (at once,
else from its later alarms); children outlive a parent that completes or fails; a child
cancelled on its own raises ChildFailed ("cancelled") in its parent; `cancel_child`
cancels a child no longer wanted. child-done takes only actors' notices, once each.
"""

from __future__ import annotations

from typing import Any

from wkguest.workflow import Config, Run, cbor
from wkguest.workflow.children.calls import ChildFailed, cancel_child, notice_event
from wkguest.workflow.testing import FakeHost

DAY = 86_400_000


def waiter(wf: Run, inp: Any) -> Any:
    return wf.wait_for_event("go", DAY)


def two_kids(wf: Run, inp: Any) -> Any:
    a = wf.spawn("kid", "attached", None)
    d = wf.spawn("kid", "detached", None, detach=True)
    return [wf.join(a), wf.join(d)]


def served(host: FakeHost, fn: Any) -> Any:
    host.serve("kid", waiter, Config())
    host.serve("parent", fn, Config(retention_ms=DAY))
    return host.client("parent")


def test_a_cancelled_parent_cancels_its_children_but_not_a_detached_one(
        any_host: FakeHost) -> None:
    c = served(any_host, two_kids)
    kids = any_host.client("kid")
    c.start("p-1", None)
    any_host.run_due()
    assert c.status("p-1").waiting_for == ("child kid/attached",)
    c.cancel("p-1")
    assert kids.status("attached").state == "cancelled"  # at once, in the cancel's event
    assert kids.status("detached").state == "waiting"
    assert any_host.instance("parent", "p-1").backend.rows(
        "SELECT id, cancel FROM _wk_wf_child ORDER BY id") == [("attached", 2), ("detached", 0)]
    # The cancelled child's notice could not reach its parent, busy cancelling it: its
    # next alarm delivers it, and the finished parent answers 409, a no-op.
    any_host.advance(1000)
    assert any_host.instance("kid", "attached").backend.rows(
        "SELECT notice FROM _wk_wf_parent") == [(1,)]
    kids.send_event("detached", "go", 1)
    any_host.run_due()
    assert kids.status("detached").output == 1
    assert c.status("p-1").state == "cancelled"


def test_an_owed_cancel_is_delivered_from_the_parents_later_alarms(
        any_host: FakeHost) -> None:
    c = served(any_host, two_kids)
    c.start("p-1", None)
    any_host.run_due()
    any_host.refusing.add(("kid", "attached"))
    c.cancel("p-1")
    assert any_host.client("kid").status("attached").state == "waiting"
    row = any_host.instance("parent", "p-1").backend.rows(
        "SELECT cancel, tries FROM _wk_wf_child WHERE id = 'attached'")
    assert row == [(1, 1)]  # owed: one try failed
    any_host.refusing.clear()
    any_host.advance(1000)
    assert any_host.client("kid").status("attached").state == "cancelled"


def test_children_outlive_a_parent_that_completes(any_host: FakeHost) -> None:
    def leaves(wf: Run, inp: Any) -> Any:
        wf.spawn("kid", "k-1", None)
        return "done"

    c = served(any_host, leaves)
    c.start("p-1", None)
    any_host.run_due()
    assert c.status("p-1").state == "completed"
    assert any_host.client("kid").status("k-1").state == "waiting"
    any_host.client("kid").send_event("k-1", "go", 2)
    any_host.run_due()
    assert any_host.client("kid").status("k-1").output == 2
    assert any_host.instance("kid", "k-1").backend.rows(
        "SELECT notice FROM _wk_wf_parent") == [(1,)]  # 409 from the finished parent


def test_a_child_cancelled_on_its_own_raises_child_failed_in_its_parent(
        any_host: FakeHost) -> None:
    def catching(wf: Run, inp: Any) -> Any:
        try:
            return wf.child("kid", "k-1", None)
        except ChildFailed as e:
            return [e.state, str(e)]

    c = served(any_host, catching)
    c.start("p-1", None)
    any_host.run_due()
    any_host.client("kid").cancel("k-1")
    any_host.run_due()
    assert c.status("p-1").output == ["cancelled", "child kid/k-1 cancelled"]


def test_cancel_child_cancels_a_child_no_longer_wanted(any_host: FakeHost) -> None:
    c = served(any_host, two_kids)
    c.start("p-1", None)
    any_host.run_due()
    parent = any_host.instance("parent", "p-1").backend
    cancel_child(parent, "kid", "detached")  # detached or not: asked for by name
    assert any_host.client("kid").status("detached").state == "cancelled"
    any_host.advance(1000)
    # Its notice is noted, but adds no event: nothing waits for a child not wanted.
    assert parent.rows("SELECT cancel, done_run IS NOT NULL FROM _wk_wf_child"
                       " WHERE id = 'detached'") == [(2, 1)]
    assert parent.rows("SELECT count(*) FROM _wk_wf_event") == [(0,)]
    cancel_child(parent, "kid", "detached")  # again: nothing more is sent
    assert parent.calls["call"] == 3  # two starts and one cancel


def test_child_done_takes_an_actors_notice_once(any_host: FakeHost) -> None:
    c = served(any_host, two_kids)
    c.start("p-1", None)
    any_host.run_due()
    notice = {"cls": "kid", "id": "attached", "run_id": "r1", "state": "completed",
              "output": "[1]", "tagged": False, "error": None}

    def done(msg: Any, sender: str = "actor") -> tuple[int, Any]:
        status, body = any_host.call("parent", "p-1", "POST", "/wk-workflow/v1/child-done",
                                     cbor.dumps(msg), sender)
        return status, cbor.loads(body)

    assert done(notice, "operator")[0] == 403
    status, doc = done({**notice, "state": "exploded"})
    assert status == 400 and "'state'" in doc["message"]
    assert done(notice) == (200, {"recorded": True})
    assert done(notice) == (200, {"recorded": False})  # the same child run: a duplicate
    backend = any_host.instance("parent", "p-1").backend
    assert backend.rows("SELECT name FROM _wk_wf_event") == [(notice_event("kid", "attached"),)]
    any_host.run_due()
    assert c.status("p-1").waiting_for == ("child kid/detached",)
