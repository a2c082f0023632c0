"""A workflow for the test kit's own tests (tests/testkit/): one of each thing the kit
drives, mocks or skips.

Input {"amount": int, "flaky": int}:
- "quote": fetches https://pay.example.test/quote (the test's fetch handler answers);
- "charge": fails its first `flaky` attempts (backoff 1 minute), then returns a charge id;
  it writes a row into the instance's own table `charges` first;
- "cool-off": sleeps 3 days;
- "approved": waits up to 1 day for the event;
- emits "charged", registers the query "progress", returns what it got.

Input {"sku": text, "fragile": bool} instead: a parent whose neighbours the test answers
itself (served as a class of its own, `parents`, from the same component): a step calls
the `pricing` actor, then it runs a child of the workflow class `shipping`; it returns
{"price": the pricing actor's answer, "shipped": the child's output}.
"""

from __future__ import annotations

import json
from typing import Any

from wkguest import actors, http, lifecycle, sqlite
from wkguest.workflow import Run, serve

THREE_DAYS = "3 days"


def quote(amount: int) -> dict[str, Any]:
    r = http.fetch(f"https://pay.example.test/quote?amount={amount}")
    if r.status != 200:
        raise RuntimeError(f"quote answered {r.status}")
    answer: dict[str, Any] = json.loads(r.body)
    return answer


def charge(wf: Run, flaky: int) -> str:
    attempt = wf.step_context.attempt
    sqlite.exec("CREATE TABLE IF NOT EXISTS charges (attempt INTEGER)")
    sqlite.exec("INSERT INTO charges VALUES (?)", (attempt,))
    if attempt <= flaky:
        raise RuntimeError(f"the bank is busy (attempt {attempt})")
    return f"ch-{attempt}"


def price(sku: str) -> Any:
    r = actors.call("pricing", "main", "GET", f"/price/{sku}", query="currency=EUR")
    if r.status != 200:
        raise RuntimeError(f"pricing answered {r.status}")
    return json.loads(r.body)


def parent(wf: Run, inp: dict[str, Any]) -> dict[str, Any]:
    me = lifecycle.self_ref().id
    p = wf.step("price", lambda: price(inp["sku"]))
    shipped = wf.child("shipping", f"ship-{me}", {"sku": inp["sku"],
                                                  "fragile": inp.get("fragile", False)})
    return {"price": p, "shipped": shipped}


def flow(wf: Run, inp: dict[str, Any]) -> dict[str, Any]:
    if "sku" in inp:
        return parent(wf, inp)
    progress = {"at": "start"}
    wf.query("progress", lambda _arg: progress)
    q = wf.step("quote", lambda: quote(inp["amount"]))
    ch = wf.step("charge", lambda: charge(wf, inp.get("flaky", 0)), attempts=5,
                 backoff_ms=60_000, timeout_ms=30_000)
    progress["at"] = "charged"
    wf.emit("charged", {"charge": ch})
    wf.sleep("cool-off", THREE_DAYS)
    approval = wf.wait_for_event("approved", "1 day")
    progress["at"] = "done"
    return {"quote": q, "charge": ch, "approved": approval, "now": wf.now()}


Handler = serve(flow)
