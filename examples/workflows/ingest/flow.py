"""Seed 003's `IngestMaterial`, ported from TypeScript with only what must change: the
imports, and Python's syntax (`await step.do(...)` is `step.do(...)`, `waitForEvent`
is `wait_for_event`, and a JS `for (let from = 1; from <= pages; from += 10)` is a
`range`). Served by app.py as the class `ingest`.

`count_pages` and `convert_pages` stand in for the real work: they call the `pages`
actor (pages.py), which counts every call, so a test sees each retry. Its converter is
busy the first time it sees a material's second batch (pages 11-20), so that batch is
converted on its second attempt, after the 10-second delay; for a material whose id
contains "stuck" it is busy for good, and the step runs out of its retries.
"""

from __future__ import annotations

import json
from typing import Any

from wkguest import actors
from wkguest.cloudflare import NonRetryableError, WorkflowEntrypoint, WorkflowEvent, WorkflowStep


class IngestMaterial(WorkflowEntrypoint):
    def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        pages = step.do("count pages", lambda: count_pages(event.payload["materialId"]))
        for first in range(1, pages + 1, 10):
            # step.do calls its fn before it returns (or not at all, on a replay), so the
            # lambda's `first` is this iteration's, as in the JS loop's closure.
            step.do("convert", {"retries": {"limit": 3, "delay": "10 seconds",
                                            "backoff": "exponential"}},
                    lambda: convert_pages(event.payload["materialId"], first, first + 9))  # noqa: B023
        step.sleep("let the index settle", "1 minute")
        review = step.wait_for_event("review", type="reviewed", timeout="1 day")
        if not review.payload["ok"]:
            raise NonRetryableError("rejected")
        return {"pages": pages}


def pages_call(path: str, payload: dict[str, Any]) -> Any:
    """Call the `pages` actor; anything but a 200 is an exception (the step's attempt
    failed, and is retried)."""
    resp = actors.call("pages", "main", "POST", path, json.dumps(payload).encode())
    if resp.status != 200:
        raise RuntimeError(f"pages {path} answered {resp.status}: "
                           f"{resp.body.decode('utf-8', 'replace').strip()}")
    return json.loads(resp.body)


def count_pages(material_id: str) -> int:
    return int(pages_call("/count", {"material": material_id})["pages"])


def convert_pages(material_id: str, first: int, last: int) -> dict[str, Any]:
    answer: dict[str, Any] = pages_call("/convert", {"material": material_id,
                                                     "first": first, "last": last})
    return answer
