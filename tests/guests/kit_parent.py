"""A workflow for the test kit's own tests (tests/testkit/) whose neighbours a test
answers itself: a step calls the `pricing` actor, then the workflow runs a child of the
workflow class `shipping`. Input {"sku": text, "fragile": bool}; returns
{"price": the pricing actor's answer, "shipped": the child's output}."""

from __future__ import annotations

import json
from typing import Any

from wkguest import actors, lifecycle
from wkguest.workflow import Run, serve


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


Handler = serve(parent)
