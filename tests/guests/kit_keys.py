"""Which fetches of a step carry an idempotency key (wf.step's `idempotency_keys`), for
tests/testkit/test_kit_overlap.py. Each step POSTs and PUTs once to
https://keys.example.test/<step>:
    default   keyed: POST and PUT (the step's key, then "-2")
    none      idempotency_keys=False: neither
    only_put  idempotency_keys=["PUT"]: the PUT only (the step's key)
    alone     an `async` step on its own position: two POSTs gathered (wkguest.overlap),
              each under the gather's own count ("<key>-1.0", "<key>-1.1")
With the input {"again": true} the run then continues as new (input {}): the second run
makes the same requests under its own run id. With {"nested": true}, instead, a group
of two async branches, each of which awaits a POST to /a or /b and then calls plain code
that runs two POSTs to /nested together (overlap.run inside a coroutine).
"""

from __future__ import annotations

from typing import Any

from wkguest import http, overlap, workflow
from wkguest.workflow import Step

SITE = "https://keys.example.test"


def _both(name: str) -> Any:
    def f() -> Any:
        return [http.fetch(f"{SITE}/{name}", m).status for m in ("POST", "PUT")]
    return f


def _sync_helper() -> list[int]:
    """Plain code that overlaps requests of its own (overlap.run), called from inside a
    coroutine whose own requests are in flight: its loop keeps theirs for them."""
    async def one(i: int) -> int:
        return (await overlap.fetch(f"{SITE}/nested", "POST", body=str(i))).status
    return overlap.run(one(0), one(1))


async def _outer(name: str) -> Any:
    first = await overlap.fetch(f"{SITE}/{name}", "POST")
    return [first.status, *_sync_helper()]


async def _alone() -> Any:
    got = await overlap.gather(overlap.fetch(f"{SITE}/alone", "POST"),
                               overlap.fetch(f"{SITE}/alone", "POST"))
    return [r.status for r in got]


def keys(wf: workflow.Run, inp: Any) -> Any:
    if (inp or {}).get("nested"):
        return wf.all([Step("outer a", lambda: _outer("a")), Step("outer b", lambda: _outer("b"))])
    out = [wf.step("default", _both("default")),
           wf.step("none", _both("none"), idempotency_keys=False),
           wf.step("only_put", _both("only_put"), idempotency_keys=["put"]),
           wf.step("alone", _alone)]
    if (inp or {}).get("again"):
        wf.continue_as_new({})
    return out


Handler = workflow.serve(keys)
