"""A workflow class that labels its instances from its code, for
tests/e2e/test_workflow_labels.py and tests/browser/test_console_labels.py.

Input: {"customer": name} (optional). The instance labels itself `stage=triage` and
`customer=<name>` (when given), takes one step, waits for the event "resolved", then
labels itself `stage=closed`, and `customer=done` if the event's payload is
{"drop": true}. Labels given at its start stay beside these.
"""

from __future__ import annotations

from typing import Any

from wkguest import workflow


def ticket(wf: workflow.Run, inp: Any) -> Any:
    customer = (inp or {}).get("customer")
    wf.set_labels({"stage": "triage", **({"customer": customer} if customer else {})})
    wf.step("triage", lambda: "triaged")
    how = wf.wait_for_event("resolved", 86_400_000) or {}
    wf.set_labels({"stage": "closed", "customer": "done" if how.get("drop") else customer})
    return how


Handler = workflow.serve(ticket, workflow.Config(retention_ms=3_600_000))
