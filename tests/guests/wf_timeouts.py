"""A workflow class whose one step has a timeout, for the step-timeout tests: its first
attempts overrun it in the way the input says, and a later one returns its attempt.

    {"how": "spin"}             the attempt computes without end: the host cuts it at the
                                deadline (a trap)
    {"how": "pure"}             `while True: pass`, a loop that calls nothing: only the
                                event's own budget cuts it (see test_workflow_timeouts)
    {"how": "sql"}              a statement that counts far past the deadline
    {"how": "fetch", "url": U}  a fetch of a URL that answers late
    {"bad": N}                  how many attempts overrun (default 1)
    {"timeout": D}              the step's timeout (default "300 ms")
"""

from __future__ import annotations

from typing import Any

from wkguest import http, sqlite, workflow

_COUNT = ("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 50000000)"
          " SELECT count(*) FROM c")


def _overrun(inp: dict[str, Any]) -> None:
    how = inp["how"]
    if how == "spin":
        n = 0
        while True:
            n = (n * 31 + 7) % 1_000_003
    if how == "pure":
        while True:
            pass
    if how == "sql":
        sqlite.exec(_COUNT)
    if how == "fetch":
        http.fetch(inp["url"])


def timeouts(wf: workflow.Run, inp: dict[str, Any]) -> Any:
    def work() -> dict[str, Any]:
        ctx = wf.step_context
        if ctx.attempt <= inp.get("bad", 1):
            _overrun(inp)
        return {"attempt": ctx.attempt, "deadline_set": ctx.deadline_ms is not None}

    return wf.step("work", work, timeout=inp.get("timeout", "300 ms"), limit=3,
                   delay="1 second", backoff="constant")


Handler = workflow.serve(timeouts, workflow.Config())
