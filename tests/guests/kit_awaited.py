"""One workflow waiting for another's result (wf.wait_for_workflow), for
tests/testkit/test_kit_awaited.py; served under two class names, "orders" and "invoices".

    {"id": ID, "cls"?: CLS, "timeout"?: duration}   wait for workflow CLS/ID (default
        class "orders"): {"got": its output} or {"failed": [type, state, error]}
    anything else (an order): wait for the event "ship", then {"order": input}, or fail
        if its payload is "fail"
"""

from __future__ import annotations

from typing import Any

from wkguest import workflow


def flow(wf: workflow.Run, inp: Any) -> Any:
    if isinstance(inp, dict) and "id" in inp:
        try:
            got = wf.wait_for_workflow(inp.get("cls", "orders"), inp["id"],
                                       inp.get("timeout", "1 day"))
        except workflow.AwaitedFailed as e:
            return {"failed": [type(e).__name__, e.state, e.error]}
        return {"got": got}
    if wf.wait_for_event("ship", "1 day") == "fail":
        wf.fail("the courier lost it")
    return {"order": inp}


Handler = workflow.serve(flow)
