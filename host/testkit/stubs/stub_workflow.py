"""The test kit's stub workflow: each instance asks the test, in one step, what it comes
to (`Kit.mock_child`): it returns that output, or fails with that error."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

from stub_url import STUB_URL
from wkguest import http, lifecycle, workflow


def _outcome(inp: Any) -> dict[str, Any]:
    me = lifecycle.self_ref()
    r = http.fetch(f"{STUB_URL}/child/{quote(me.cls, safe='')}/{quote(me.id, safe='')}",
                   "POST", [("content-type", "application/json")], json.dumps(inp))
    if r.status != 200:
        raise RuntimeError(f"the test kit answered {r.status}: {r.body[:200]!r}")
    answer: dict[str, Any] = json.loads(r.body)
    return answer


def stub(wf: workflow.Run, inp: Any) -> Any:
    outcome = wf.step("wk-kit: the mocked outcome", lambda: _outcome(inp))
    if outcome.get("error") is not None:
        wf.fail(str(outcome["error"]))
    return outcome.get("output")


Handler = workflow.serve(stub)
