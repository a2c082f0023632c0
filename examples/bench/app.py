"""The benchmark workflow class (`wfbench`): served with `workflow.serve`, as users do.

One function, shaped by its input (a JSON object), so one component covers every
workload of `bench/bench_workflows.py`:

    {"n": N}                 N trivial steps (small dict results), then returns {"steps": N}
    {"n": N, "fail_first": true}  the same N steps, each raising a ConnectionError on its
                             first attempt and returning on its second (no backoff): what
                             a failed attempt costs (its traceback, its log line), and a
                             retry (an event more)
    {"n": N, "sleeping": true}  the same N steps, then a sleep until the far future: the
                                instance keeps N recorded positions and every on_alarm
                                event replays all of them (the replay benchmark)
    {"big": K, "sleeping": ...} one step whose result is a string of K characters (1 MiB)
    {"wake_at": T}           sleeps until T (host clock, ms), then records lifecycle.now()
                             in a step and returns it: the wake lateness is now - T

Each step's function builds its value in a lambda, as workflow code does; the step names
repeat (loops may repeat names).
"""

from __future__ import annotations

from typing import Any

from wkguest import lifecycle, workflow

FAR = 10**15


def _refused(attempt: int) -> None:
    if attempt == 1:
        raise ConnectionError("the service refused the first attempt")


def _flaky(wf: workflow.Run, i: int) -> dict[str, Any]:
    _refused(wf.step_context.attempt)
    return {"order": f"ord-{i:06d}", "status": "charged", "n": i}


def bench(wf: workflow.Run, inp: Any) -> Any:
    if "wake_at" in inp:
        wf.sleep_until("until", int(inp["wake_at"]))
        woke = wf.step("woke", lifecycle.now)
        return {"due": inp["wake_at"], "woke": woke}
    if "big" in inp:
        k = int(inp["big"])
        value = wf.step("big", lambda: "x" * k)
        if inp.get("sleeping"):
            wf.sleep("sleeping", FAR)
        return {"len": len(value)}
    n = int(inp.get("n", 3))
    if inp.get("fail_first"):
        for i in range(n):
            wf.step("step", lambda i=i: _flaky(wf, i), attempts=2, backoff_ms=0)
        return {"steps": n}
    for i in range(n):
        wf.step("step", lambda i=i: {"order": f"ord-{i:06d}", "status": "charged", "n": i})
    if inp.get("sleeping"):
        wf.sleep("sleeping", FAR)
    return {"steps": n}


Handler = workflow.serve(bench, workflow.Config(retention_ms=3_600_000))
