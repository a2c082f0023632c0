"""A workflow class that continues as new, for tests/e2e/test_workflow_continue.py and
bench/bench_continue.py. One function, shaped by its input (a JSON object); the run
number travels in the input that each run hands to `wf.continue_as_new` ("run", 1 when
absent).

    {"runs": R, "steps": S}
        (the e2e test) each run: S tx steps "effect <i>", each inserting (run, i) into
        the instance's own table `effects` (the insert tagged /*app:effect*/), an emit
        "run" {"run": r}, a sleep "rest" of 1 s, then a continue with run r + 1. Run R
        instead waits for the event "note" (sent during run 1: pending events cross the
        switch), counts the rows of each (run, i) in a last tx step, and returns
        {"runs": R, "note": payload, "counts": [[run, i, n], ...]}: a repeated effect
        shows as an n above 1.
    {"total": T, "every": E, "hold": [r, ...]}
        (the benchmark) T trivial steps with small dict results (as examples/bench/app.py),
        E per run, continuing as new after each E until all T are done; returns
        {"steps": T, "runs": r}. Each run listed in "hold" waits for the event "go" after
        its steps, so that the benchmark can time alarm events that replay that run's
        positions.
"""

from __future__ import annotations

from typing import Any

from wkguest import workflow

FAR = 10**12  # ms: a hold's timeout, never reached in a benchmark

EFFECTS = workflow.Tables("""
    CREATE TABLE IF NOT EXISTS effects (seq INTEGER PRIMARY KEY, run INTEGER NOT NULL,
                                        i INTEGER NOT NULL)
""")


def _effect(run: int, i: int) -> Any:
    def effect(db: workflow.TxDb) -> Any:
        db.exec("/*app:effect*/ INSERT INTO effects (run, i) VALUES (?, ?)", (run, i))
        return db.scalar("SELECT count(*) FROM effects")
    return effect


def _counts(db: workflow.TxDb) -> Any:
    return db.query("SELECT run, i, count(*) FROM effects GROUP BY run, i ORDER BY run, i")


def chained(wf: workflow.Run, inp: Any) -> Any:
    run = int(inp.get("run", 1))
    if "total" in inp:
        return _loop(wf, inp, run)
    for i in range(int(inp["steps"])):
        wf.step(f"effect {i}", _effect(run, i), tx=EFFECTS)
    wf.emit("run", {"run": run})
    if run < int(inp["runs"]):
        wf.sleep("rest", 1000)
        wf.continue_as_new({**inp, "run": run + 1})
    note = wf.wait_for_event("note", 60_000)
    return {"runs": run, "note": note, "counts": wf.step("count", _counts, tx=True)}


def _loop(wf: workflow.Run, inp: Any, run: int) -> Any:
    total, every = int(inp["total"]), int(inp["every"])
    first = (run - 1) * every
    for n in range(first, min(first + every, total)):
        wf.step("step", lambda n=n: {"order": f"ord-{n:06d}", "status": "charged", "n": n})
    if run in inp.get("hold", ()):
        wf.wait_for_event("go", FAR)
    if first + every < total:
        wf.continue_as_new({**inp, "run": run + 1})
    return {"steps": total, "runs": run}


# run_budget_ms: an event runs new steps for 2 s at most, so that a run of 100,000 steps
# (the benchmark's single run without a continue) spans events well within the host's
# CPU budget per event.
Handler = workflow.serve(chained, workflow.Config(retention_ms=3_600_000, run_budget_ms=2_000))
