"""A workflow class that emits an event at each stage and answers a query about it, for
tests/e2e/test_workflow_events.py.

Input: {"items": [name, ...]}. Each item is a step, "pack <item>", followed by an emit
"packed"; then the workflow waits for "ship" and emits "shipped" with its payload. The
query "progress" answers the items packed so far and the stage, with its argument.
"""

from __future__ import annotations

from typing import Any

from wkguest import workflow


def packing(wf: workflow.Run, inp: Any) -> Any:
    state: dict[str, Any] = {"packed": [], "stage": "packing"}
    wf.query("progress", lambda arg: {**state, "asked": arg})
    for item in inp["items"]:
        state["packed"].append(wf.step(f"pack {item}", lambda item=item: item.upper()))
        wf.emit("packed", {"item": item, "n": len(state["packed"])})
    state["stage"] = "waiting for ship"
    by = wf.wait_for_event("ship", 86_400_000)
    state["stage"] = "shipped"
    wf.emit("shipped", {"by": by})
    return state["packed"]


Handler = workflow.serve(packing, workflow.Config(retention_ms=3_600_000))
