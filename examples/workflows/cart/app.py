"""The `carts` workflow class: a shopping cart that takes updates (wf.on_update), one
actor per cart.

    update "add" SKU    price the item (a step) and add it; answers {"items": n,
                        "total": cents}. Its validator refuses a sku that is not text,
                        or one in the cart already: nothing is recorded then
    update "wrap" MS    gift-wrap the cart: a handler that takes MS (a durable sleep),
                        then answers "wrapped"
    query "items"       [[sku, cents], ...]
    event "checkout"    charge the total and end: {"items": [...], "paid_by": payload}

The input "one step" makes a workflow of one step instead, {"steps": 1}: the start that
bench/bench_updates.py times beside an update.
"""

from __future__ import annotations

from typing import Any

from wkguest import workflow


def cart(wf: workflow.Run, inp: Any) -> Any:
    if inp == "one step":
        return wf.step("one step", lambda: {"steps": 1})
    items: list[list[Any]] = []

    def add(sku: str) -> dict[str, int]:
        cents = wf.step(f"price {sku}", lambda: 100 * len(sku))
        items.append([sku, cents])
        return {"items": len(items), "total": sum(c for _, c in items)}

    def check(sku: Any) -> None:
        if not isinstance(sku, str) or not sku:
            raise ValueError("a sku is non-empty text")
        if any(s == sku for s, _ in items):
            raise ValueError(f"{sku} is in the cart already")

    def wrap(ms: int) -> str:
        wf.sleep("wrapping", ms)
        return "wrapped"

    wf.on_update("add", add, check)
    wf.on_update("wrap", wrap)
    wf.query("items", lambda _: items)
    paid_by = wf.wait_for_event("checkout", "1 day")
    wf.step("charge", lambda: sum(c for _, c in items))
    return {"items": items, "paid_by": paid_by}


Handler = workflow.serve(cart)
