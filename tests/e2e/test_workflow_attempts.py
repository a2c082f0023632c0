"""Each attempt's history through a real `wkhost serve`: the demo's order with two failed
charges and a pack that traps shows every attempt (`wkhost workflow steps --attempts`),
with the trap's reason on the cut one, its times on the host's clock and the fuel each
attempt burnt; `--values` shows the recorded values, cut at `--value-bytes`."""

from __future__ import annotations

import json
import subprocess
import sys

from . import workflow_support
from .server import REPO
from .workflow_support import ShopFactory, finished, waiting_for

workflow_wasm = workflow_support.workflow_wasm
shop_factory = workflow_support.shop_factory


def steps_cli(shop: workflow_support.Shop, *args: str) -> str:
    cmd = [sys.executable, "-m", "wkhost.cli", "workflow", "steps", "orders", "a1", *args,
           "--server", shop.server.url, "--data", str(shop.server.data)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd=REPO)
    assert out.returncode == 0, (args, out.returncode, out.stdout, out.stderr)
    return out.stdout


def test_the_demos_failed_charges_and_cut_pack_are_in_the_history(
        shop_factory: ShopFactory) -> None:
    shop = shop_factory()
    shop.app_start("a1", cool_off_ms=0, charge_failures=2, trap_in_pack=True)
    shop.drive("a1", waiting_for("approved"))
    shop.approve("a1")
    s = shop.drive("a1", finished)
    assert s["state"] == "completed", s
    got = {st["name"]: st for st in json.loads(steps_cli(shop, "--attempts", "--json"))}
    charge = got["charge"]["history"]
    assert [(a["attempt"], a["outcome"]) for a in charge] == [
        (1, "failed"), (2, "failed"), (3, "returned")]
    assert all("ledger /charge answered 5" in a["error"] for a in charge[:2]), charge
    assert all(a["ended_at"] >= a["started_at"] and a["duration_ms"] >= 0 for a in charge)
    assert charge[0]["ended_at"] <= charge[1]["started_at"] <= charge[2]["started_at"]
    assert all(isinstance(a["fuel"], int) and a["fuel"] > 0 for a in charge), charge
    pack = got["pack"]["history"]
    assert [(a["attempt"], a["outcome"], a["ended_at"]) for a in pack[:1]] == [(1, "cut", None)]
    # the exception the guest reported as it trapped (the host's record of the trap)
    assert pack[0]["error"].startswith("the guest raised SystemExit: "), pack
    assert [(a["attempt"], a["outcome"]) for a in pack[1:]] == [(2, "returned")]
    assert [a["attempt"] for a in got["reserve"]["history"]] == [1]
    assert got["cool-off"]["history"] == [] and "value" not in got["charge"]

    table = steps_cli(shop, "--attempts").splitlines()
    lines = [ln.strip() for ln in table]
    assert sum(ln.startswith("attempt ") and " failed " in ln for ln in lines) == 2, table
    assert any(ln.startswith("attempt 1  cut") and "the guest raised SystemExit" in ln
               for ln in lines)
    assert any(ln.startswith("attempt 3  returned") and "fuel " in ln for ln in lines)

    valued = json.loads(steps_cli(shop, "--values", "--value-bytes", "10", "--json"))
    by_name = {st["name"]: st for st in valued}
    assert by_name["pack"]["value"] == '"parcel-a1'[:10] and by_name["pack"]["value_truncated"]
    assert by_name["cool-off"]["value"] == "null"

    bad = subprocess.run(
        [sys.executable, "-m", "wkhost.cli", "workflow", "steps", "orders", "a1", "--values",
         "--value-bytes", "0", "--server", shop.server.url, "--data", str(shop.server.data)],
        capture_output=True, text=True, timeout=60, cwd=REPO)
    assert bad.returncode == 2 and "--value-bytes" in bad.stderr, bad
