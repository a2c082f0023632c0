"""`wkhost workflow compat` against a real `wkhost serve` holding live orders: the
reordered build would park each of them, and says where; the next version (a change
behind `wf.patched`, a step appended) replays them all; and the live instances are
only read: nothing of theirs changes, no step of theirs runs."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from . import workflow_support
from .conftest import MakeServer
from .server import REPO, Server
from .workflow_support import HOUR, INTERNAL, Shop, finished, waiting_for

workflow_wasm = workflow_support.workflow_wasm  # the fixture, by name


@pytest.fixture
def shop(make_server: MakeServer, workflow_wasm: dict[str, Path]) -> Shop:
    s = Shop(make_server(actors={n: workflow_wasm[n] for n in ("orders", "ledger", "app")},
                         access=INTERNAL))
    s.app_start("w1", cool_off_ms=0)
    s.drive("w1", waiting_for("approved"))
    s.app_start("s1", cool_off_ms=HOUR)
    s.drive("s1", lambda st: st["state"] == "waiting" and not st["waiting_for"])
    s.app_start("c1", cool_off_ms=0)
    s.drive("c1", waiting_for("approved"))
    s.approve("c1")
    s.drive("c1", finished)
    return s


def compat(server: Server, wasm: Path) -> tuple[int, dict[str, Any], str]:
    proc = subprocess.run([sys.executable, "-m", "wkhost.cli", "workflow", "compat",
                           "orders", str(wasm), "--json", "--server", server.url,
                           "--data", str(server.data)],
                          capture_output=True, text=True, timeout=300)
    return proc.returncode, json.loads(proc.stdout or "{}"), proc.stderr


def by_id(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {v["id"]: v for v in doc["instances"]}


def test_a_reordered_build_would_park_every_order_and_says_where(
        shop: Shop, workflow_wasm: dict[str, Path]) -> None:
    before = {oid: shop.steps(oid) for oid in ("w1", "s1", "c1")}
    code, doc, err = compat(shop.server, workflow_wasm["orders_reordered"])
    assert code == 1, err
    assert not doc["ok"]
    got = by_id(doc)
    assert set(got) == {"w1", "s1", "c1"}
    for oid in ("w1", "s1", "c1"):
        assert got[oid]["verdict"] == "reordered", got[oid]
        assert "position 0 was recorded as step 'reserve'" in got[oid]["detail"]
        assert "step 'charge'" in got[oid]["detail"]
    assert got["w1"]["state"] == "waiting" and got["c1"]["state"] == "completed"
    assert "3 instances of orders to replay" in err  # progress on stderr
    # Only read: the live instances are as they were.
    assert {oid: shop.steps(oid) for oid in ("w1", "s1", "c1")} == before


def test_the_next_version_replays_every_order(
        shop: Shop, build_guest: Callable[[str | Path], Path]) -> None:
    v2 = build_guest(REPO / "examples" / "workflows" / "orders" / "app_v2.py")
    code, doc, err = compat(shop.server, v2)
    assert code == 0, err
    assert doc["ok"] and [v["verdict"] for v in doc["instances"]] == ["replays"] * 3
    # Deployed for real, the waiting order goes on under it: no gift wrap (its history
    # predates the change), and the appended step thanks its customer.
    shop.server.stop()
    shop.server.actors["orders"] = v2
    shop = Shop(shop.server.start())  # on its new port
    shop.approve("w1")
    s = shop.drive("w1", finished)
    assert s["state"] == "completed" and "wrapped" not in s["output"], s
    assert [st["name"] for st in shop.steps("w1")][-1] == "thank"
