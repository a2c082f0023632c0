"""What the runner tells the host's log (core/told.py): one record for each failure and
each operator's end, with the fields to filter by, told once (a replay tells nothing),
and nothing for what goes well."""

from __future__ import annotations

from typing import Any

from wkguest.workflow import Compensation, Run
from wkguest.workflow.testing import FakeHost

from .conftest import run_one


def told(host: FakeHost, cls: str, id: str) -> list[tuple[str, str, dict[str, str]]]:
    return list(host.instance(cls, id).backend.logged)


def events(host: FakeHost, cls: str, id: str) -> list[str]:
    return [f["workflow_event"] for _, _, f in told(host, cls, id)]


def run_id(host: FakeHost, cls: str, id: str) -> str:
    return str(host.instance(cls, id).backend.rows("SELECT run_id FROM _wk_wf")[0][0])


def test_a_workflow_that_goes_well_tells_nothing(any_host: FakeHost) -> None:
    any_host.serve("w", lambda wf, _: [wf.step(f"s{i}", lambda i=i: i) for i in range(3)])
    any_host.client("w").start("1")
    any_host.run_due()
    assert any_host.client("w").status("1").state == "completed"
    assert told(any_host, "w", "1") == []


def test_a_retried_then_failed_step_and_the_workflows_failure_each_tell_once(
        any_host: FakeHost) -> None:
    def charge() -> None:
        raise ConnectionError("refused")

    st = run_one(any_host, lambda wf, _: wf.step("charge", charge, attempts=2,
                                                 backoff_ms=10), 5, 100)
    assert st.state == "failed"
    records = told(any_host, "w", "1")
    assert events(any_host, "w", "1") == ["step-retried", "step-failed", "failed"]
    rid = run_id(any_host, "w", "1")
    (lv1, msg1, f1), (lv2, msg2, f2), (lv3, msg3, f3) = records
    assert lv1 == "info" and msg1 == ("step 'charge' (position 0) attempt 1 failed, "
                                      "retried: ConnectionError: refused")
    assert f1 == {"workflow_event": "step-retried", "run_id": rid, "pos": "0",
                  "step": "charge", "attempt": "1", "next_attempt_at": f1["next_attempt_at"],
                  "error": "ConnectionError: refused"}
    assert lv2 == "warning" and f2["attempt"] == "2" and f2["step"] == "charge"
    assert msg2 == "step 'charge' (position 0) failed after 2 attempt(s): ConnectionError: refused"
    assert lv3 == "warning" and f3["run_id"] == rid
    assert msg3 == ("workflow failed: step 'charge' failed after 2 attempt(s): "
                    "ConnectionError: refused")
    any_host.advance(100)  # later events replay nothing new: nothing more is told
    assert len(told(any_host, "w", "1")) == 3


def test_a_bad_run_and_the_park_after_too_many_tell_why(any_host: FakeHost) -> None:
    def wf(run: Run, _: Any) -> Any:
        raise KeyError("missing")

    assert run_one(any_host, wf, 30, 60_000).state == "parked"
    got = told(any_host, "w", "1")
    bad = [r for r in got if r[2]["workflow_event"] == "bad-run"]
    assert bad and all(r[0] == "warning" for r in bad)
    assert bad[0][2]["error"] == "the workflow function raised KeyError: 'missing'"
    assert bad[0][2]["bad_runs"] == "1"
    assert got[-1][0] == "warning" and got[-1][2]["workflow_event"] == "parked"
    assert "runs in a row ended without the workflow function returning" in got[-1][1]


def test_cancel_and_terminate_tell_at_info(any_host: FakeHost) -> None:
    any_host.serve("w", lambda wf, _: wf.sleep("nap", 60_000))
    c = any_host.client("w")
    for id in ("c", "t"):
        c.start(id)
    any_host.run_due()
    c.cancel("c")
    c.terminate("t", reason="wrong customer")
    assert [(lv, f["workflow_event"]) for lv, _, f in told(any_host, "w", "c")] == [
        ("info", "cancelled")]
    ((lv, msg, f),) = told(any_host, "w", "t")
    assert lv == "info" and f["workflow_event"] == "terminated"
    assert "wrong customer" in msg and "wrong customer" in f["error"]


def test_a_failed_child_is_told_by_its_parent_once(any_host: FakeHost) -> None:
    def failing(wf: Run, inp: Any) -> Any:
        wf.fail("out of stock")

    any_host.serve("kid", failing)
    any_host.serve("parent", lambda wf, inp: wf.child("kid", "k-1", inp))
    any_host.client("parent").start("p", 1)
    any_host.run_due()
    assert any_host.client("parent").status("p").state == "failed"
    assert events(any_host, "kid", "k-1") == ["failed"]
    records = told(any_host, "parent", "p")
    assert [f["workflow_event"] for _, _, f in records] == ["child-failed", "failed"]
    lv, msg, f = records[0]
    assert lv == "warning" and msg == "child kid/k-1 failed: out of stock"
    assert (f["child"], f["child_state"]) == ("kid/k-1", "failed")
    assert f["child_run_id"] == run_id(any_host, "kid", "k-1")


def test_compensations_that_ran_are_told_before_the_failure(any_host: FakeHost) -> None:
    def refund() -> None:
        raise RuntimeError("refund refused")

    def broken() -> None:
        raise ValueError("closed")

    def wf(run: Run, _: Any) -> Any:
        run.step("reserve", lambda: 1, compensate=lambda: None)
        run.step("charge", lambda: 2, compensate=Compensation(refund, attempts=1))
        run.step("notify", broken, attempts=1)

    any_host.serve("w", wf)
    any_host.client("w").start("1")
    for _ in range(3):
        any_host.advance(1000)
    assert any_host.client("w").status("1").state == "failed"
    got = [(lv, f["workflow_event"]) for lv, _, f in told(any_host, "w", "1")]
    assert got == [("warning", "step-failed"), ("warning", "step-failed"),
                   ("warning", "compensated"), ("warning", "failed")]
    _, msg, f = told(any_host, "w", "1")[2]
    assert (f["compensations"], f["failed"]) == ("2", "1")
    assert msg.startswith("2 compensation(s) ran, 1 failed: step 'compensate:charge'")
