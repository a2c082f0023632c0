"""The `trips` workflow (served by app.py): a saga that books a flight and a hotel
together, then pays.

Input: {"trip": id, "pay_fails": bool}. The flight and the hotel are booked in one group
(`wf.all`: both at once, their results in the order given), each with its compensation;
if the payment then fails for good, the workflow fails and the compensations run, newest
first (the hotel's, then the flight's), each a recorded step. A real trip would call
services inside the steps (with `step_keyed`'s key); this one prints what it does.
"""

from __future__ import annotations

from typing import Any

from wkguest import workflow
from wkguest.workflow import Step


def _say(what: str) -> Any:
    def f() -> str:
        print(what)
        return what
    return f


def _pay(inp: dict[str, Any]) -> Any:
    def f() -> str:
        if inp.get("pay_fails"):
            raise RuntimeError("card declined")
        return f"paid {inp['trip']}"
    return f


def trip(wf: workflow.Run, inp: dict[str, Any]) -> Any:
    t = inp["trip"]
    flight, hotel = wf.all([
        Step("book flight", _say(f"flight for {t}"), compensate=_say(f"flight for {t} cancelled")),
        Step("book hotel", _say(f"hotel for {t}"), compensate=_say(f"hotel for {t} cancelled")),
    ])
    paid = wf.step("pay", _pay(inp), attempts=2, backoff_ms=500)
    return {"flight": flight, "hotel": hotel, "paid": paid}
