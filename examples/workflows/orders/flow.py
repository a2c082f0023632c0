"""The order workflow, a reordered copy of it that stands for a bad deploy, and a next
version that running instances survive (a change behind `wf.patched`, a step appended).

An order reserves stock, optionally packs (a step that traps the first time, to show a
crash inside a step), cools off (a durable sleep), waits for an "approved" event (with a
timeout), charges (a flaky service: retried with backoff), and notifies (with try_step:
a failure is handled, not fatal). Every step calls the `ledger` actor with the step's
idempotency key, but one that is not idempotent on purpose (`number_invoice`): the
crash-point harness (`wkhost test crash-points`) shows what that costs.

Input (a JSON object): item, qty, amount, and the knobs
    charge_failures     how many times the ledger refuses the charge first (default 0)
    trap_in_pack        pack traps on its first attempt (default false)
    cool_off_ms         the sleep (default 1000)
    approve_within_ms   how long to wait for "approved" (default 1 day)
    notify_fails        the notification service is down (default false)
    number_invoice      a last step takes the next invoice number from the ledger, with
                        no key: run again, it takes another (default false)
"""

from __future__ import annotations

import json
from typing import Any

from wkguest import actors, lifecycle
from wkguest.workflow import NonRetryable, Run

DAY_MS = 86_400_000


def ledger(path: str, payload: dict[str, Any]) -> dict[str, Any]:
    """Call the ledger; a 5xx is worth retrying, a 4xx is not."""
    resp = actors.call("ledger", "main", "POST", path, json.dumps(payload).encode())
    text = resp.body.decode("utf-8", "replace").strip()
    if resp.status >= 500:
        raise RuntimeError(f"ledger {path} answered {resp.status}: {text}")
    if resp.status >= 400:
        raise NonRetryable(f"ledger {path} refused: {text}")
    answer: dict[str, Any] = json.loads(resp.body)
    return answer


def pack(order_id: str, key: str) -> str:
    if ledger("/attempt", {"key": key})["n"] == 1:
        # A crash in the middle of a step: not an exception the runner could catch, but
        # a trap of the whole instance. The attempt was counted before the step ran, and
        # the watchdog alarm brings the instance back after the step's backoff.
        raise SystemExit("the packing robot fell over (first attempt only)")
    return f"parcel-{order_id}"


def order(wf: Run, inp: dict[str, Any]) -> dict[str, Any]:
    oid = lifecycle.self_ref().id  # the same on every replay: safe outside a step
    reservation = wf.step_keyed("reserve", lambda key: ledger(
        "/reserve", {"order": oid, "item": inp["item"], "qty": inp["qty"], "key": key}))
    parcel = None
    if inp.get("trap_in_pack"):
        parcel = wf.step_keyed("pack", lambda key: pack(oid, key))
    wf.sleep("cool-off", int(inp.get("cool_off_ms", 1000)))
    approval = wf.wait_for_event("approved", int(inp.get("approve_within_ms", DAY_MS)))
    if approval is None:
        wf.step_keyed("release", lambda key: ledger("/release", {"order": oid, "key": key}))
        wf.fail("not approved in time: the reservation was released")
    charge = wf.step_keyed("charge", lambda key: ledger("/charge", {
        "order": oid, "amount": inp["amount"], "key": key,
        "fail_times": inp.get("charge_failures", 0)}))
    note = wf.try_step("notify", lambda: ledger(
        "/notify", {"order": oid, "fail": inp.get("notify_fails", False)}),
        attempts=2, backoff_ms=500)
    out = {"order": oid, "reservation": reservation["reservation"], "parcel": parcel,
           "charge": charge["charge_id"], "approved_by": approval.get("by"),
           "notified": note.ok, "notify_error": note.error}
    if inp.get("number_invoice"):
        out["invoice"] = wf.step("invoice", lambda: ledger("/invoice", {"order": oid}))["number"]
    return out


def order_reordered(wf: Run, inp: dict[str, Any]) -> dict[str, Any]:
    """A 'deploy' that moved the charge before the reservation. Running instances must
    fail with "the code changed the order of its steps", not mix two histories."""
    oid = lifecycle.self_ref().id
    charge = wf.step_keyed("charge", lambda key: ledger("/charge", {
        "order": oid, "amount": inp["amount"], "key": key}))
    reservation = wf.step_keyed("reserve", lambda key: ledger(
        "/reserve", {"order": oid, "item": inp["item"], "qty": inp["qty"], "key": key}))
    return {"order": oid, "charge": charge["charge_id"],
            "reservation": reservation["reservation"]}


def order_v2(wf: Run, inp: dict[str, Any]) -> dict[str, Any]:
    """A deploy that running orders survive: orders started after it are gift-wrapped
    first (behind `wf.patched`: an order whose history predates it replays as before),
    and every order thanks its customer after the notification (a step after the
    recorded ones)."""
    oid = lifecycle.self_ref().id
    wrapped = None
    if wf.patched("gift-wrap"):
        wrapped = wf.step_keyed("wrap", lambda key: ledger("/attempt", {"key": key})["n"])
    out = order(wf, inp)
    wf.step("thank", lambda: f"thanks-{oid}")
    return {**out, "wrapped": wrapped} if wrapped is not None else out
