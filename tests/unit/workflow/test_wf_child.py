"""Child workflows: wf.child, wf.spawn and wf.join, in both replay modes.

A parent starts a child of another class with a call (the start route with its parent),
waits for the child's notice (child-done, sent when the child finishes), and gets its
output or ChildFailed. Nothing polls: every test runs only the alarms that are due.
"""

from __future__ import annotations

from typing import Any

import pytest
from wkguest.workflow import Config, Run
from wkguest.workflow.children.calls import ChildFailed
from wkguest.workflow.testing import FakeHost, Trap

DAY = 86_400_000


def doubler(wf: Run, inp: Any) -> Any:
    return wf.step("double", lambda: inp["n"] * 2)


def parent(wf: Run, inp: Any) -> Any:
    got = wf.child("kid", f"k-{inp}", {"n": inp})
    return {"got": got, "after": wf.step("after", lambda: "done")}


def served(host: FakeHost, fn: Any = parent, kid: Any = doubler,
           config: Config | None = None, kid_config: Config | None = None) -> Any:
    host.serve("kid", kid, kid_config or Config())
    host.serve("parent", fn, config or Config())
    return host.client("parent")


def steps(host: FakeHost, cls: str, id: str) -> list[tuple[Any, ...]]:
    return host.instance(cls, id).backend.rows(
        "SELECT pos, kind, name FROM _wk_wf_step ORDER BY pos")


def test_a_parent_awaits_its_child_and_gets_its_output(any_host: FakeHost) -> None:
    c = served(any_host)
    c.start("p-1", 21)
    any_host.run_due()
    st = c.status("p-1")
    assert (st.state, st.output) == ("completed", {"got": 42, "after": "done"})
    kid = any_host.client("kid").status("k-21")
    assert (kid.state, kid.output) == ("completed", 42)
    assert steps(any_host, "parent", "p-1") == [
        (0, "S", "\x02child kid/k-21"), (1, "E", "\x02child kid/k-21"), (2, "S", "after")]
    # The child knows its parent, and its notice was delivered.
    assert any_host.instance("kid", "k-21").backend.rows(
        "SELECT cls, pid, detached, notice FROM _wk_wf_parent") == [("parent", "p-1", 0, 1)]


def test_a_waiting_parent_shows_its_child_readably(any_host: FakeHost) -> None:
    def slow_kid(wf: Run, inp: Any) -> Any:
        return wf.wait_for_event("go", DAY)

    c = served(any_host, kid=slow_kid)
    c.start("p-1", 1)
    any_host.run_due()
    st = c.status("p-1")
    assert (st.state, st.waiting_for, st.wake_at) == ("waiting", ("child kid/k-1",), None)
    page = any_host.instance("parent", "p-1").protocol.handle(
        "POST", "/wk-workflow/v1/steps", b"", "operator")
    from wkguest.workflow import cbor

    shown = [(s["name"], s["kind"], s["state"], s["wake_at"])
             for s in cbor.loads(page.body)["steps"]]
    assert shown == [("child kid/k-1", "step", "done", None),
                     ("child kid/k-1", "wait", "waiting", None)]
    any_host.client("kid").send_event("k-1", "go", "now")
    any_host.run_due()
    assert c.status("p-1").output == {"got": "now", "after": "done"}


def test_a_failing_child_fails_its_parent_with_child_failed(any_host: FakeHost) -> None:
    def failing(wf: Run, inp: Any) -> Any:
        wf.fail("out of stock")

    caught: list[ChildFailed] = []

    def catching(wf: Run, inp: Any) -> Any:
        try:
            wf.child("kid", "k-1", inp)
        except ChildFailed as e:
            caught.append(e)
            raise

    c = served(any_host, fn=catching, kid=failing)
    c.start("p-1", 1)
    any_host.run_due()
    st = c.status("p-1")
    assert st.state == "failed"
    assert st.error == "child kid/k-1 failed: out of stock"
    e = caught[-1]
    assert (e.cls, e.id, e.state, e.error) == ("kid", "k-1", "failed", "failed: out of stock")


def test_the_start_survives_a_trap_after_its_call_and_the_child_starts_once(
        any_host: FakeHost) -> None:
    runs: list[int] = []

    def counting(wf: Run, inp: Any) -> Any:
        return wf.step("count", lambda: runs.append(inp) or len(runs))

    c = served(any_host, kid=counting)
    trapped: list[str] = []

    def trap_at_the_record(method: str, sql: str) -> bool:
        if "/*wk:result*/" in sql and not trapped:  # after the start's call returned
            trapped.append(sql)
            raise Trap("killed between the start's call and its record")
        return False

    c.start("p-1", 7)
    any_host.instance("parent", "p-1").backend.fail_when = trap_at_the_record
    any_host.run_due()
    assert trapped and any_host.traps == 1
    assert any_host.client("kid").status("k-7").state == "completed"
    any_host.advance(1000)  # the start's retry, after its backoff: the child exists
    st = c.status("p-1")
    assert (st.state, st.output) == ("completed", {"got": 1, "after": "done"})
    assert runs == [{"n": 7}]  # one child, run once
    assert any_host.instance("kid", "k-7").backend.rows("SELECT count(*) FROM _wk_wf") == [(1,)]


def test_an_id_used_again_as_another_class_is_refused_naming_both(any_host: FakeHost) -> None:
    def two(wf: Run, inp: Any) -> Any:
        wf.child("kid", "k-1", {"n": 1})
        try:
            wf.child("other", "k-1", {"n": 1})
        except ChildFailed as e:
            return str(e)
        return "reused"

    c = served(any_host, fn=two)
    any_host.serve("other", doubler)
    c.start("p-1", None)
    any_host.run_due()
    out = c.status("p-1").output
    assert "'kid'" in out and "'other'" in out and out.startswith("child other/k-1 not started")
    with pytest.raises(KeyError):
        any_host.instance("other", "k-1")  # never called: refused before the start


def test_an_existing_child_with_another_input_is_refused_naming_both(
        any_host: FakeHost) -> None:
    def reuse(wf: Run, inp: Any) -> Any:
        try:
            return wf.child("kid", "k-1", {"n": inp})
        except ChildFailed as e:
            return str(e)

    # The parent is gone long before its child: a new parent of the same id meets the
    # old child, under the same id, with another input.
    c = served(any_host, fn=reuse, config=Config(retention_ms=1000),
               kid_config=Config(retention_ms=DAY))
    c.start("p-1", 1)
    any_host.run_due()
    assert c.status("p-1").output == 2
    any_host.advance(2000)
    with pytest.raises(KeyError):
        any_host.instance("parent", "p-1")  # past its retention
    c.start("p-1", 5)
    any_host.run_due()
    out = c.status("p-1").output
    assert out.startswith("child kid/k-1 not started")
    assert "{'n': 1}" in out and "{'n': 5}" in out


def test_an_instance_started_by_a_client_is_no_child(any_host: FakeHost) -> None:
    def adopt(wf: Run, inp: Any) -> Any:
        try:
            return wf.child("kid", "k-1", {"n": 1})
        except ChildFailed as e:
            return str(e)

    c = served(any_host, fn=adopt)
    any_host.client("kid").start("k-1", {"n": 1})
    c.start("p-1", None)
    any_host.run_due()
    out = c.status("p-1").output
    assert "started by a client" in out and "parent/p-1" in out


def test_a_gone_parent_makes_the_notice_a_no_op(any_host: FakeHost) -> None:
    def slow_kid(wf: Run, inp: Any) -> Any:
        wf.sleep("a while", 10_000)
        return "late"

    def fire_and_forget(wf: Run, inp: Any) -> Any:
        wf.spawn("kid", "k-1", None)
        return "left"

    c = served(any_host, fn=fire_and_forget, kid=slow_kid, config=Config(retention_ms=1000),
               kid_config=Config(retention_ms=60_000))
    c.start("p-1", None)
    any_host.run_due()
    assert c.status("p-1").state == "completed"
    any_host.advance(5000)
    with pytest.raises(KeyError):
        any_host.instance("parent", "p-1")  # past its retention
    any_host.advance(10_000)  # the child finishes: its notice finds no parent (404)
    kid = any_host.instance("kid", "k-1")
    assert kid.backend.rows("SELECT notice FROM _wk_wf_parent") == [(1,)]
    assert ("parent", "p-1") not in any_host.instances  # the 404 left nothing behind
    assert any_host.client("kid").status("k-1").output == "late"
    any_host.advance(60_000)  # and the child is retained as usual, then deleted
    assert ("kid", "k-1") not in any_host.instances


def test_spawn_and_join_out_of_order(any_host: FakeHost) -> None:
    def fan(wf: Run, inp: Any) -> Any:
        a = wf.spawn("kid", "a", {"n": 1})
        b = wf.spawn("kid", "b", {"n": 2})
        return [wf.join(b), wf.join(a)]

    c = served(any_host, fn=fan)
    c.start("p-1", None)
    any_host.run_due()
    assert c.status("p-1").output == [4, 2]
    assert [n for _, k, n in steps(any_host, "parent", "p-1")] == [
        "\x02child kid/a", "\x02child kid/b", "\x02child kid/b", "\x02child kid/a"]


def test_children_across_classes_and_of_the_same_class(any_host: FakeHost) -> None:
    def fib(wf: Run, inp: Any) -> Any:  # each child's id is its path: one parent each
        n, path = inp
        if n < 2:
            return n
        a = wf.spawn("fib", f"{path}.1", [n - 1, f"{path}.1"])
        b = wf.spawn("fib", f"{path}.2", [n - 2, f"{path}.2"])
        return wf.join(a) + wf.join(b)

    def grand(wf: Run, inp: Any) -> Any:
        return {"fib": wf.child("fib", "f", [6, "f"]), "kid": wf.child("kid", "k", {"n": 3})}

    c = served(any_host, fn=grand)
    any_host.serve("fib", fib)
    c.start("p-1", None)
    any_host.run_due()
    assert c.status("p-1").output == {"fib": 8, "kid": 6}


def test_an_owed_notice_is_delivered_by_the_childs_later_alarms(any_host: FakeHost) -> None:
    c = served(any_host)
    c.start("p-1", 3)
    any_host.refusing.add(("parent", "p-1"))  # the child's first notice cannot get there
    any_host.run_due()
    assert c.status("p-1").state == "waiting"
    owed = any_host.instance("kid", "k-3").backend.rows(
        "SELECT notice, tries, error FROM _wk_wf_parent")
    assert owed[0][:2] == (0, 1) and "refused" in owed[0][2]
    any_host.advance(1000)  # the retry is refused too: the backoff doubles
    assert any_host.instance("kid", "k-3").backend.rows(
        "SELECT tries FROM _wk_wf_parent") == [(2,)]
    any_host.refusing.clear()
    any_host.advance(2000)
    assert c.status("p-1").output == {"got": 6, "after": "done"}
    assert any_host.instance("kid", "k-3").backend.rows(
        "SELECT notice FROM _wk_wf_parent") == [(1,)]


def test_an_unserved_child_class_fails_the_start_after_its_attempts(
        any_host: FakeHost) -> None:
    def orphan(wf: Run, inp: Any) -> Any:
        return wf.child("nobody", "n-1", None)

    c = served(any_host, fn=orphan, config=Config(attempts=2, backoff_ms=100))
    c.start("p-1", None)
    any_host.run_due()
    any_host.advance(1000)
    st = c.status("p-1")
    assert st.state == "failed"
    assert st.error.startswith("child nobody/n-1 not started: ")
    assert "unknown class 'nobody'" in st.error


def test_seed_004s_spawn_is_wf_spawn(any_host: FakeHost) -> None:
    # workflow PurchaseOrder { step validate { 1 } }
    # let w = spawn PurchaseOrder {} in { w }
    def purchase_order(wf: Run, inp: Any) -> Any:
        return wf.step("validate", lambda: 1)

    def program(wf: Run, inp: Any) -> Any:
        w = wf.spawn("PurchaseOrder", "po-1", {})
        return [w.cls, w.id]

    any_host.serve("PurchaseOrder", purchase_order)
    any_host.serve("program", program)
    any_host.client("program").start("main", None)
    any_host.run_due()
    assert any_host.client("program").status("main").output == ["PurchaseOrder", "po-1"]
    po = any_host.client("PurchaseOrder").status("po-1")
    assert (po.state, po.output, po.positions) == ("completed", 1, 1)


def test_a_second_join_of_one_handle_parks_naming_it(any_host: FakeHost) -> None:
    def twice(wf: Run, inp: Any) -> Any:
        h = wf.spawn("kid", "k-1", {"n": 1})
        wf.join(h)
        return wf.join(h)

    c = served(any_host, fn=twice)
    c.start("p-1", None)
    any_host.run_due()
    st = c.status("p-1")
    assert st.state == "parked" and "joined already" in (st.error or "")


def test_a_notice_survives_power_losses_and_a_resent_one_is_a_duplicate(
        any_host: FakeHost) -> None:
    def slow_kid(wf: Run, inp: Any) -> Any:
        return wf.wait_for_event("go", DAY)

    c = served(any_host, kid=slow_kid)
    c.start("p-1", 1)
    any_host.run_due()
    any_host.client("kid").send_event("k-1", "go", "went")
    assert any_host.fire("kid", "k-1")  # it finishes and its notice reaches the parent
    parent, kid = (any_host.instance(*k).backend for k in (("parent", "p-1"), ("kid", "k-1")))
    assert parent.rows("SELECT count(*) FROM _wk_wf_event") == [(1,)]
    parent.power_loss()  # the notice was recorded durably, with its alarm
    kid.power_loss()  # the delivered mark was a plain write: the notice is owed again
    assert kid.rows("SELECT notice FROM _wk_wf_parent") == [(0,)]
    assert any_host.fire("kid", "k-1")  # sent again: the parent knows it already
    assert kid.rows("SELECT notice FROM _wk_wf_parent") == [(1,)]
    assert parent.rows("SELECT count(*) FROM _wk_wf_event") == [(1,)]
    any_host.run_due()
    assert c.status("p-1").output == {"got": "went", "after": "done"}
    assert parent.rows("SELECT count(*) FROM _wk_wf_event") == [(0,)]


def test_children_go_on_across_continue_as_new_and_report_to_the_new_run(
        any_host: FakeHost) -> None:
    """A run spawns a child and continues as new; the new run reaches the same child
    with wf.child (same id and input): taken over, not started again, and its end comes
    to the new run (Temporal #2609)."""
    def slow_kid(wf: Run, inp: Any) -> Any:
        return {"kid": inp, "got": wf.wait_for_event("go", DAY)}

    def runs(wf: Run, inp: Any) -> Any:
        if inp == "first":
            wf.spawn("kid", "k-1", 5)
            wf.continue_as_new("second")
        return wf.child("kid", "k-1", 5)

    c = served(any_host, runs, slow_kid)
    c.start("p-1", "first")
    any_host.run_due()
    st = c.status("p-1")
    assert (st.state, st.runs) == ("waiting", 2), st
    kid = any_host.client("kid")
    kid.send_event("k-1", "go", "now")
    any_host.run_due()
    st = c.status("p-1")
    assert (st.state, st.output) == ("completed", {"kid": 5, "got": "now"}), st
    assert kid.status("k-1").runs == 1  # started once


def test_a_child_that_ended_before_the_new_run_reached_it(any_host: FakeHost) -> None:
    def runs(wf: Run, inp: Any) -> Any:
        if inp == "first":
            wf.spawn("kid", "k-2", {"n": 4})
            wf.sleep("let it finish", 1000)
            wf.continue_as_new("second")
        return wf.child("kid", "k-2", {"n": 4})

    c = served(any_host, runs)
    c.start("p-2", "first")
    any_host.run_due()
    any_host.advance(1000)
    st = c.status("p-2")
    assert (st.state, st.output, st.runs) == ("completed", 8, 2), st
