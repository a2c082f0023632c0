"""A cart that takes updates (wf.on_update), for tests/e2e/test_updates.py and the
bench's update round trip (bench/bench_updates.py).

    update "add" sku      price it (a step), add it: {"items": n, "total": cents}; its
                          validator refuses a sku that is not text, one in the cart
                          already, and "sneak" tries to write from the validator
    update "slow" ms      sleep `ms` in the handler, then answer "slept"
    query "items"         [[sku, cents], ...]
    event "checkout"      charge the total and end: {"items": [...], "paid_by": payload}
"""

from __future__ import annotations

from typing import Any

from wkguest import sqlite, workflow


def cart(wf: workflow.Run, inp: Any) -> Any:
    items: list[list[Any]] = []

    def add(sku: str) -> dict[str, int]:
        cents = wf.step(f"price {sku}", lambda: 100 * len(sku))
        items.append([sku, cents])
        return {"items": len(items), "total": sum(c for _, c in items)}

    def check(sku: Any) -> None:
        if sku == "sneak":
            sqlite.exec("CREATE TABLE sneaked (x)")  # refused: a validator only reads
        if not isinstance(sku, str) or not sku:
            raise ValueError("a sku is non-empty text")
        if any(s == sku for s, _ in items):
            raise ValueError(f"{sku} is in the cart already")

    def slow(ms: int) -> str:
        wf.sleep("slow", ms)
        return "slept"

    wf.on_update("add", add, check)
    wf.on_update("slow", slow)
    wf.query("items", lambda _: items)
    paid_by = wf.wait_for_event("checkout", "1 day")
    wf.step("charge", lambda: sum(c for _, c in items))
    return {"items": items, "paid_by": paid_by}


Handler = workflow.serve(cart)
