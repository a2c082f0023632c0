"""Seed 004's ParallelTest as a served workflow class, for the console's timeline test
(tests/browser/test_console_timeline.py): its steps and emits around a group of two
branches (`parallel { step branch_a ... step branch_b ... }`), then a sleep, a wait for
an event, a race of a wait and a sleep, a child and a last step, so that one instance's
page holds every kind of position a timeline draws.

Input (a JSON object, every key optional):
    {"kid": id}        run child `id` of this class (served as "parallel", or "kid_cls")
    {"child": parent}  be that child: one step, then its output
    {"rounds": n}      continue as new n times first (a step "round" and an emit "RoundDone"
                       in each run)
    {"fail": true}     the step "after" fails for good: branch_a's compensation runs

branch_b returns bytes, so its value is stored tagged (core/values.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from wkguest import workflow
from wkguest.workflow.groups.branches import Sleep, Step, Wait

HOUR = 3_600_000


def _after(inp: dict[str, Any]) -> Callable[[], Any]:
    def f() -> Any:
        if inp.get("fail"):
            raise RuntimeError("after: the last step refused")
        return "after"
    return f


def parallel_test(wf: workflow.Run, inp: Any) -> Any:
    inp = inp or {}
    if "child" in inp:
        return wf.step("child work", lambda: f"done for {inp['child']}")
    if inp.get("rounds"):
        wf.step("round", lambda: inp["rounds"])
        wf.emit("RoundDone", inp["rounds"])
        wf.continue_as_new({**inp, "rounds": inp["rounds"] - 1})
    wf.step("before", lambda: "before")
    wf.emit("BeforeDone")
    a, b = wf.all([Step("branch_a", lambda: "A", compensate=lambda: "A undone"),
                   Step("branch_b", lambda: b"\x00B\xff")])
    wf.emit("BranchA_Done", a)
    wf.emit("BranchB_Done", len(b))
    wf.sleep("settle", 1500)
    approval = wf.wait_for_event("approve", HOUR)
    won = wf.any([Wait("late", 60_000), Sleep("deadline", 5000)])
    kid = None
    if "kid" in inp:
        kid = wf.child(inp.get("kid_cls", "parallel"), inp["kid"], {"child": "parent"})
    after = wf.step("after", _after(inp), attempts=2, backoff_ms=200)
    wf.emit("AfterDone")
    return {"a": a, "approval": approval, "won": won.index, "kid": kid, "after": after}


Handler = workflow.serve(parallel_test, workflow.Config(retention_ms=HOUR))
