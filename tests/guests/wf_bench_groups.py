"""A workflow class for bench/bench_groups.py: fan-outs and child workflows. One function,
shaped by its input (a JSON object); served under two class names (`wfgroups` and
`wfgroupchild`) from the same component, so a parent and its child are instances of two
classes in one host.

    {"fan": N}            one `wf.all` of N step branches (small dict results, as
                          examples/bench/app.py's steps), one position; returns
                          {"branches": N, "last": the last branch's "n"}
    {"n": N}              N sequential steps (the same results), N positions; returns
                          {"steps": N}
    {"child": CLS, "id": ID, "n": N}
                          a parent: `wf.child(CLS, ID, {"n": N})` (the child runs N
                          sequential steps), then returns {"child": the child's output}
"""

from __future__ import annotations

from typing import Any

from wkguest import workflow
from wkguest.workflow.groups.branches import Step


def _result(i: int) -> Any:
    return lambda: {"order": f"ord-{i:06d}", "status": "charged", "n": i}


def groups(wf: workflow.Run, inp: Any) -> Any:
    if "fan" in inp:
        n = int(inp["fan"])
        got = wf.all([Step(f"branch {i}", _result(i)) for i in range(n)])
        return {"branches": len(got), "last": got[-1]["n"] if got else None}
    if "child" in inp:
        out = wf.child(str(inp["child"]), str(inp["id"]), {"n": int(inp["n"])})
        return {"child": out}
    n = int(inp.get("n", 3))
    for i in range(n):
        wf.step("step", _result(i))
    return {"steps": n}


Handler = workflow.serve(groups, workflow.Config(retention_ms=3_600_000))
