"""An operator's moves through `wkhost serve` and `wkhost workflow ...` (the runner's
operator/moves.py): the bad-deploy rescue, a terminate while a step is in backoff, a pause that
lasts across a restart, a restart from a named step that reuses the results before it
and keeps the attempts it removes as earlier ones, and a bulk move by filter. The orders
example, in both replay modes (shop_factory).
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from . import workflow_support
from .server import REPO
from .workflow_support import (
    SECOND,
    Shop,
    ShopFactory,
    expected_output,
    in_state,
    waiting_for,
)

workflow_wasm = workflow_support.workflow_wasm
shop_factory = workflow_support.shop_factory


def wkhost(shop: Shop, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "wkhost.cli", "workflow", *args,
           "--server", shop.server.url, "--data", str(shop.server.data)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd=REPO)


def test_the_bad_deploy_rescue(shop_factory: ShopFactory, tmp_path: Any) -> None:
    """Code A starts it; a reordered code B parks it; A served again, `rescue` completes
    it, each ledger call made once."""
    data = tmp_path / "deploy"
    a = shop_factory(data=data)
    a.app_start("o1", cool_off_ms=0)
    a.wait_for("o1", waiting_for("approved"))
    now = a.now()
    assert a.server.stop() == 0

    b = shop_factory(data=data, orders="orders_reordered")
    b.advance_to(now)
    b.approve("o1")
    parked = b.wait_for("o1", in_state("parked"))
    now = b.now()
    assert b.server.stop() == 0

    a = shop_factory(data=data)
    a.advance_to(now)
    assert a.status("o1") == parked  # A does not move it on its own either
    out = wkhost(a, "rescue", "orders", "o1")
    assert out.returncode == 0, (out.stdout, out.stderr)
    assert out.stdout.startswith("orders/o1: running, 3 positions"), out.stdout
    s = a.drive("o1", in_state("completed", "failed", "parked"))
    assert (s["state"], s["output"]) == ("completed", expected_output("o1")), s
    assert all(n == 1 for n in a.calls().values()), a.calls()


def test_terminate_while_a_step_is_in_backoff(shop_factory: ShopFactory) -> None:
    shop = shop_factory()
    shop.app_start("o1", cool_off_ms=0, charge_failures=3)
    shop.wait_for("o1", waiting_for("approved"))
    shop.approve("o1")
    shop.wait_for("o1", lambda s: shop.has_step("o1", "charge", state="retrying",
                                                 attempts=1))
    calls = shop.calls()
    out = wkhost(shop, "terminate", "orders", "o1", "--reason", "fraud")
    assert out.returncode == 0, (out.stdout, out.stderr)
    assert out.stdout.startswith("orders/o1: terminated, "), out.stdout
    assert "  error: terminated by an operator: fraud\n" in out.stdout, out.stdout
    shop.advance(60 * SECOND)  # far past the backoff
    assert shop.calls() == calls  # no attempt more, no release, no notify
    done = wkhost(shop, "status", "orders", "o1")
    assert done.returncode == 14, (done.stdout, done.stderr)
    again = wkhost(shop, "terminate", "orders", "o1")  # finished: nothing changes
    assert again.returncode == 0 and again.stdout == done.stdout, again


def test_a_pause_lasts_across_a_restart(shop_factory: ShopFactory, tmp_path: Any) -> None:
    data = tmp_path / "pause"
    shop = shop_factory(data=data)
    shop.app_start("o1", cool_off_ms=0)
    shop.wait_for("o1", waiting_for("approved"))
    out = wkhost(shop, "pause", "orders", "o1")
    assert out.returncode == 0, (out.stdout, out.stderr)
    assert out.stdout.startswith("orders/o1: paused, 3 positions, waiting for approved, "
                                 "paused since "), out.stdout
    now = shop.now()
    assert shop.server.stop() == 0

    shop = shop_factory(data=data)
    shop.advance_to(now)
    assert shop.approve("o1")[0] == 200  # recorded, not taken
    shop.advance(2 * workflow_support.DAY)  # past the wait's deadline too
    s = shop.status("o1")
    assert (s["state"], s["events_pending"]) == ("paused", 1), s
    held = wkhost(shop, "status", "orders", "o1", "--wait", "--timeout", "30")
    assert held.returncode == 13, (held.stdout, held.stderr)  # a wait rests at a pause
    out = wkhost(shop, "resume", "orders", "o1")
    assert out.returncode == 0, (out.stdout, out.stderr)
    s = shop.drive("o1", in_state("completed", "failed", "parked"))
    assert (s["state"], s["output"]) == ("completed", expected_output("o1")), s


def test_restart_from_a_named_step_reuses_the_results_before_it(
        shop_factory: ShopFactory) -> None:
    shop = shop_factory()
    shop.app_start("o1", cool_off_ms=0)
    shop.wait_for("o1", waiting_for("approved"))
    shop.approve("o1")
    first = shop.drive("o1", in_state("completed"))
    calls = shop.calls()
    out = wkhost(shop, "restart", "orders", "o1", "--from-step", "charge")
    assert out.returncode == 0, (out.stdout, out.stderr)
    assert out.stdout.startswith("orders/o1: running, 3 positions"), out.stdout
    s = shop.drive("o1", in_state("completed", "failed", "parked"))
    # The same output and run id: reserve, the cool-off and the approval recorded before
    # charge are kept, not run or waited for again.
    assert (s["state"], s["output"], s["run_id"]) == (
        "completed", first["output"], first["run_id"]), s
    again = shop.calls()
    changed = {k: again[k] - calls.get(k, 0) for k in again if again[k] != calls.get(k)}
    # charge and notify ran again (charge under the same key: the ledger knew it), and
    # nothing before charge did.
    assert sorted(op for op, _ in changed) == ["charge", "notify"], changed


def test_a_restart_from_a_step_keeps_the_attempts_it_removes(
        shop_factory: ShopFactory) -> None:
    """The demo's order, its charge failing twice, restarted from the charge: `steps
    --attempts` still shows the three attempts from before, under the restart."""
    shop = shop_factory()
    shop.app_start("o1", cool_off_ms=0, charge_failures=2)
    shop.wait_for("o1", waiting_for("approved"))
    shop.approve("o1")
    assert shop.drive("o1", in_state("completed"))["state"] == "completed"
    before = shop.now()
    out = wkhost(shop, "restart", "orders", "o1", "--from-step", "charge")
    assert out.returncode == 0, (out.stdout, out.stderr)
    assert shop.drive("o1", in_state("completed", "failed", "parked"))["state"] == "completed"
    out = wkhost(shop, "steps", "orders", "o1", "--attempts", "--json")
    assert out.returncode == 0, (out.stdout, out.stderr)
    got = {st["name"]: st for st in json.loads(out.stdout)}
    charge = got["charge"]
    assert [(a["attempt"], a["outcome"]) for a in charge["history"]] == [(1, "returned")]
    assert [(a["attempt"], a["outcome"]) for a in charge["earlier"]] == [
        (1, "failed"), (2, "failed"), (3, "returned")], charge
    assert all("payment service busy" in a["error"] for a in charge["earlier"][:2])
    assert all(a["moved_at"] >= before for a in charge["earlier"])
    assert "ledger" in charge["earlier"][0]["traceback"]
    assert [a["outcome"] for a in got["notify"]["earlier"]] == ["returned"]
    assert got["reserve"]["earlier"] == []
    text = wkhost(shop, "steps", "orders", "o1", "--attempts").stdout.splitlines()
    at = next(i for i, ln in enumerate(text) if ln.split()[2:3] == ["charge"])
    assert text[at + 1].strip().startswith("before the restart at "), text
    assert text[at + 2].strip().startswith("attempt 1  failed"), text


def test_a_bulk_move_by_filter(shop_factory: ShopFactory) -> None:
    shop = shop_factory()
    for oid in ("o1", "o2"):
        shop.app_start(oid, cool_off_ms=0)
        shop.wait_for(oid, waiting_for("approved"))
    shop.app_start("o3", cool_off_ms=0)
    shop.wait_for("o3", waiting_for("approved"))
    shop.approve("o3")
    shop.drive("o3", in_state("completed"))
    dry = wkhost(shop, "bulk", "orders", "pause", "--status", "waiting", "--dry-run",
                 "--json")
    assert dry.returncode == 0, (dry.stdout, dry.stderr)
    assert json.loads(dry.stdout) == {"action": "pause", "dry_run": True, "matched": 2,
                                      "ids": ["o1", "o2"]}
    assert shop.status("o1")["state"] == "waiting"  # a dry run sends nothing
    out = wkhost(shop, "bulk", "orders", "pause", "--status", "waiting",
                 "--since", str(shop.now() - 3_600_000))
    assert out.returncode == 0, (out.stdout, out.stderr)
    assert out.stdout == ("o1\tpaused\no2\tpaused\npause: 2 of 2 instance(s) of orders\n")
    assert [shop.status(o)["state"] for o in ("o1", "o2", "o3")] == [
        "paused", "paused", "completed"]
    none = wkhost(shop, "bulk", "orders", "resume", "--status", "paused",
                  "--until", "1970-01-02T00:00:00Z", "--dry-run")
    assert none.stdout.endswith("would act on 0 instance(s) of orders (dry run: nothing "
                                "was sent)\n"), none.stdout
