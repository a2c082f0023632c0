"""Workflows across a host's restarts: a deploy of reordered code, and a `kill -9`.

Both restart `wkhost serve` on the same data directory. The fake clock of a new server
resumes where the old one was (never behind it: DATA/_host/fake-clock).
"""

from __future__ import annotations

import json
import subprocess
import sys
from functools import partial
from typing import Any

from . import workflow_support
from .server import REPO
from .workflow_support import (
    CUT_1,
    FINISHED,
    RETENTION,
    Shop,
    ShopFactory,
    eventually,
    expected_output,
    finished,
    in_state,
    ledger_key,
    wait_until,
    waiting_for,
)

# the fixtures, by name (tests/e2e/conftest.py is shared with other suites)
workflow_wasm = workflow_support.workflow_wasm
shop_factory = workflow_support.shop_factory

REORDERED = (
    "the code changed the order of its steps: position 0 was recorded as step 'reserve', "
    "and the code now reaches step 'charge' there. Running instances need the recorded "
    "order (new steps may only follow the recorded ones); serve changed code as a new class."
)


# -- 9. a deploy that changed the order of the steps ------------------------------------------

def test_a_deploy_of_reordered_steps_parks_the_running_order(shop_factory: ShopFactory,
                                                            tmp_path: Any) -> None:
    """Not the workflow's failure but the deploy's: the order parks, unfinished, with the
    reason, holds no alarm, and `wkhost workflow status` says so with exit code 12."""
    data = tmp_path / "deploy"
    v1 = shop_factory(data=data)
    v1.app_start("o1", cool_off_ms=0)
    before = v1.wait_for("o1", waiting_for("approved"))
    steps, calls, now = v1.steps("o1"), v1.calls(), v1.now()
    assert v1.server.stop() == 0  # SIGTERM: a clean stop

    v2 = shop_factory(data=data, orders="orders_reordered")
    v2.advance_to(now)
    assert v2.status("o1") == before  # nothing ran the new code yet
    assert v2.approve("o1") == (200, {"sent": "approved"})
    s = v2.wait_for("o1", in_state("parked", *FINISHED))
    assert (s["state"], s["error"]) == ("parked", REORDERED), s
    assert (s["wake_at"], s["finished_at"], s["parked_at"]) == (None, None, s["updated_at"])
    assert v2.steps("o1") == steps  # no history mixed in: nothing recorded after it
    assert v2.calls() == calls  # and the reordered code's charge never ran
    assert v2.admin.status("orders", "o1").is_parked
    cli = subprocess.run(
        [sys.executable, "-m", "wkhost.cli", "workflow", "status", "orders", "o1",
         "--server", v2.server.url, "--data", str(v2.server.data)],
        capture_output=True, text=True, timeout=60, cwd=REPO)
    assert cli.returncode == 12, (cli.returncode, cli.stdout, cli.stderr)
    assert cli.stdout.startswith("orders/o1: parked, "), cli.stdout
    assert f"  error: {REORDERED}\n" in cli.stdout, cli.stdout
    v2.advance(RETENTION + 1000)  # past any backoff, and past the class's retention
    assert v2.status("o1") == s  # nothing ran it, and retention kept it

    # A new order runs the new code from its start.
    v2.app_start("o2")
    s = v2.drive("o2", finished)
    assert s["state"] == "completed", s
    assert s["output"] == {"order": "o2", "charge": "ch-o2", "reservation": "res-o2"}


# -- 10. kill -9 in the middle of workflows ---------------------------------------------------

KNOBS = {"trap_in_pack": True, "charge_failures": 2}  # and a cool-off of 1 s
IDS = [f"k{i}" for i in range(5)]


def alarms_pending(shop: Shop) -> int:
    return int(json.loads(shop.server.request("GET", "/_wk/health")[2])["alarms_pending"])


def rests_until_known(shop: Shop, oid: str) -> bool:
    s = shop.status(oid)
    return finished(s) or s["wake_at"] is not None


def snapshot(shop: Shop) -> tuple[dict[str, dict[str, Any]], dict[str, list[dict[str, Any]]]]:
    statuses = {oid: shop.status(oid) for oid in IDS}
    return statuses, {oid: shop.steps(oid) for oid in IDS}


def test_kill_9_mid_workflow_then_restart(shop_factory: ShopFactory, tmp_path: Any) -> None:
    data = tmp_path / "k9"
    shop = shop_factory(data=data)
    # Orders at different points when the host dies:
    #   k0 approved, its charge failed twice (a backoff pending)
    #   k1 approved the moment before the kill: its charge is likely running when it dies
    #   k2 approved while it sleeps (the event waits for the wait), after a trap in pack
    #   k3 sleeping after a trap in pack
    #   k4 just started: the kill comes right after its first positions are recorded
    for oid in ("k0", "k1"):
        shop.app_start(oid, **KNOBS)
    shop.drive("k0", waiting_for("approved"))
    shop.drive("k1", waiting_for("approved"))
    shop.approve("k0")
    wait_until(lambda: shop.steps("k0")[-1]["name"] == "charge"
               and shop.steps("k0")[-1]["attempts"] == 1, what="k0 charge attempt 1")
    for oid in ("k2", "k3"):
        shop.app_start(oid, **KNOBS)
        wait_until(partial(shop.has_step, oid, "pack", attempts=1, error=CUT_1),
                   what=f"{oid} trapped in pack")
    shop.approve("k2")
    shop.advance(1000)  # k0's charge, k2's and k3's pack run again, as k4 starts
    shop.app_start("k4", **KNOBS)
    wait_until(lambda: len(shop.steps("k4")) >= 1, what="k4's first position")

    # Just before the kill: what is recorded, then what the ledger counted.
    statuses, steps = snapshot(shop)
    calls_before = shop.calls()
    clock = shop.now()
    assert shop.approve("k1") == (200, {"sent": "approved"})  # recorded durably...
    shop.server.kill9()  # ...and its run is cut, or not: either way it must finish right
    approved = {"k0", "k1", "k2"}

    recorded: dict[tuple[str, str], tuple[str, int]] = {}  # ledger key -> (order, position)
    for oid in IDS:
        for st in steps[oid]:
            key = ledger_key(oid, statuses[oid]["run_id"], st)
            if key is not None and st["state"] in ("done", "failed"):
                recorded[key] = (oid, st["pos"])
    assert recorded, steps
    assert all(not finished(s) for s in statuses.values()), statuses

    shop = shop_factory(data=data)
    wait_until(lambda: any("not clean" in line for line in shop.server.log), 5,
               what="the host noticed the unclean stop")
    shop.advance_to(clock)
    # Every order holds an alarm (unfinished: its next run; finished: its retention).
    wait_until(lambda: alarms_pending(shop) >= len(IDS), 5, what="an alarm per order")
    # Whatever was due runs now (the clock stands still); then every unfinished order
    # rests until a time its status tells. (Checked at the end, after the main promises.)
    no_wake = {oid: shop.status(oid) for oid in IDS
               if not eventually(partial(rests_until_known, shop, oid), 3)}

    for oid in IDS:
        if oid not in approved:
            shop.drive(oid, waiting_for("approved"))
            assert shop.approve(oid) == (200, {"sent": "approved"})
    final = {oid: shop.drive(oid, finished) for oid in IDS}
    calls_after = shop.calls()
    final_steps = {oid: shop.steps(oid) for oid in IDS}

    for oid, s in final.items():
        assert s["state"] == "completed", (oid, s)
        assert s["output"] == expected_output(oid, parcel=True), (oid, s)
        assert s["run_id"] == statuses[oid]["run_id"]
        assert s["events_pending"] == 0, (oid, s)  # each approval taken once
    # No recorded step ran again: the ledger counted none of them after the restart.
    grew = {key: (calls_before.get(key), calls_after.get(key), where)
            for key, where in recorded.items() if calls_after.get(key) != calls_before.get(key)}
    assert grew == {}, grew
    for key, (oid, pos) in recorded.items():  # and the journal kept them where they were
        before = next(st for st in steps[oid] if st["pos"] == pos)
        after = final_steps[oid][pos]
        assert (after["name"], after["state"], after["attempts"]) == (
            before["name"], before["state"], before["attempts"]), (key, before, after)
    assert len(shop.charges()) == len(IDS)  # one charge per order
    assert no_wake == {}, f"unfinished instances without a wake_at after the restart: {no_wake}"
