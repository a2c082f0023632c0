"""A workflow class that fans out, for the groups' crash tests (tests/e2e/test_workflow_groups.py).

Input: {"n": how many step branches}. It runs `n` step branches and a sleep together
(wf.all), each step calling the ledger's /attempt with its own key (the ledger counts
every call, so a test can tell a branch that ran again from one that did not), then races
the event "go" against a sleep (wf.any), and returns what each branch saw and the race.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from wkguest import actors, workflow
from wkguest.workflow.groups.branches import Sleep, Step, Wait


def _attempt(key: str) -> Callable[[], Any]:
    def f() -> Any:
        r = actors.call("ledger", "main", "POST", "/attempt", json.dumps({"key": key}).encode())
        if r.status != 200:
            raise RuntimeError(f"ledger answered {r.status}")
        return key
    return f


def fan_out(wf: workflow.Run, inp: Any) -> Any:
    branches: list[Any] = [Step(f"b{i}", _attempt(f"b{i}")) for i in range(inp["n"])]
    got = wf.all([*branches, Sleep("nap", 1000)])
    won = wf.any([Wait("go", 60_000), Sleep("give up", 120_000)])
    return {"got": got, "won": [won.index, won.value]}


Handler = workflow.serve(fan_out, workflow.Config(retention_ms=3_600_000))
