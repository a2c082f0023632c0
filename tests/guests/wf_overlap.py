"""A workflow whose group's step branches are `async` and wait together (wkguest.overlap),
for tests/e2e/test_overlap_workflows.py and bench/bench_overlap.py.

Input (a JSON object):
    {"url": "http://127.0.0.1:PORT",     the site the branches POST to
     "n": 5,                             how many step branches
     "group": "all",                     "all", "any" or "all_settled"
     "fails": 0,                         each branch's path answers 500 this many times
                                         first (holding_site.py's /fail/N/...): the
                                         branch raises, and is retried after 1 s
     "call": false,                      each branch awaits a call of probe actor
                                         "<id>-<i>"'s /fetch (which fetches the site)
                                         instead of fetching it itself
     "sync": false,                      the branches are plain functions (one at a time)
     "children": false,                  the branches are child workflows of this class,
                                         each one plain step that fetches the site (the
                                         other shape of overlap: events of other actors)
     "after": true}                      then a plain step "after" POSTs twice to
                                         <url>/after/<id>, blocking: its keys are the
                                         step's key and that key with "-2"
Output: {"branches": [...], "after": [...] (or null)}.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from wkguest import http, lifecycle, overlap, workflow
from wkguest.workflow import Child, Step


def _branch(base: str, inp: dict[str, Any], i: int) -> Callable[[], Any]:
    me = lifecycle.self_ref().id
    fails = int(inp.get("fails", 0))
    path = f"/fail/{fails}/b{i}/{me}" if fails else f"/b{i}/{me}"
    url = base + path

    async def fetched() -> Any:
        r = await overlap.fetch(url, "POST", body=f"branch {i}")
        return _checked(r.status, r.body)

    async def called() -> Any:
        asked = json.dumps({"url": url, "method": "POST", "body": f"branch {i}"})
        r = await overlap.call("probe", f"{me}-{i}", "POST", "/fetch", asked)
        got = json.loads(r.body)
        return _checked(int(got.get("status", 0)), got.get("body", "").encode())

    def blocking() -> Any:
        r = http.fetch(url, "POST", body=f"branch {i}")
        return _checked(r.status, r.body)

    if inp.get("sync"):
        return blocking
    return called if inp.get("call") else fetched


def _checked(status: int, body: bytes) -> str:
    if status >= 500:
        raise RuntimeError(f"the site answered {status}")
    return body.decode()


def _after(base: str) -> Callable[[], Any]:
    url = f"{base}/after/{lifecycle.self_ref().id}"

    def after() -> Any:
        return [http.fetch(url, "POST").status, http.fetch(url, "POST").status]
    return after


def fan(wf: workflow.Run, inp: Any) -> Any:
    base, n = inp["url"], int(inp.get("n", 5))
    if "child" in inp:  # a child of a "children" fan-out: one plain fetch
        return wf.step("b", _branch(base, {"sync": True}, int(inp["child"])))
    me = lifecycle.self_ref()
    branches: list[Any] = [
        Child(me.cls, f"{me.id}-c{i}", {"url": base, "child": i}) if inp.get("children")
        else Step(f"b{i}", _branch(base, inp, i), backoff_ms=1000, backoff="constant",
                  attempts=10) for i in range(n)]
    group = inp.get("group", "all")
    if group == "any":
        won = wf.any(branches)
        got: Any = [won.index, won.value]
    elif group == "all_settled":
        got = [[r.ok, r.value, r.error] for r in wf.all_settled(branches)]
    else:
        got = wf.all(branches)
    after = wf.step("after", _after(base)) if inp.get("after", True) else None
    return {"branches": got, "after": after}


Handler = workflow.serve(fan, workflow.Config(retention_ms=3_600_000))
