"""Listing without waking anyone, through `wkhost serve --processes 2`: each instance
publishes its state (WIT attributes), the host's index filters, orders, pages and counts
on it across both processes, `wkhost actors` and `wkhost workflow list` read it, and a
kill -9 leaves an index that the next start rebuilds from the instances' databases."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from . import workflow_support
from .conftest import MakeServer
from .server import REPO
from .workflow_support import HOUR, INTERNAL, ORDER, Shop, finished, in_state, wait_until

workflow_wasm = workflow_support.workflow_wasm  # the fixture, by name


def wkhost(shop: Shop, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "wkhost.cli", *args, "--server", shop.server.url,
           "--data", str(shop.server.data)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd=REPO)


def ok(shop: Shop, *args: str) -> str:
    out = wkhost(shop, *args)
    assert out.returncode == 0, (args, out.returncode, out.stdout, out.stderr)
    return out.stdout


def children(pid: int) -> list[int]:
    return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def serve(make_server: MakeServer, wasm: dict[str, Path], data: Path) -> Shop:
    actors = {"orders": wasm["orders"], "ledger": wasm["ledger"], "app": wasm["app"]}
    return Shop(make_server(actors=actors, access=INTERNAL, data=data,
                            extra=["--processes", "2"]))


def test_listing_by_state_across_processes_and_after_a_kill(
        make_server: MakeServer, workflow_wasm: dict[str, Path], tmp_path: Path) -> None:
    data = tmp_path / "data"
    shop = serve(make_server, workflow_wasm, data)
    ids = [f"o{i}" for i in range(8)]  # both processes own some (host/partition.py)
    for oid in ids:
        ok(shop, "workflow", "start", "orders", oid, "--input",
           json.dumps({**ORDER, "cool_off_ms": 0 if oid in ("o1", "o2") else HOUR}))
    for oid in ids:
        shop.wait_for(oid, in_state("waiting"))
    shop.advance(1000)  # what follows begins later (the clock is the test's)
    for oid in ("o1", "o2"):
        assert shop.approve(oid)[0] == 200
        shop.wait_for(oid, finished)
    ok(shop, "workflow", "cancel", "orders", "o3")

    waiting = sorted(set(ids) - {"o1", "o2", "o3"})
    assert ok(shop, "actors", "orders", "--status", "waiting", "--count") == "5\n"
    assert ok(shop, "actors", "orders", "--status", "waiting").split() == waiting
    assert ok(shop, "actors", "orders", "--status", "completed", "--status",
              "cancelled").split() == ["o1", "o2", "o3"]
    lines = ok(shop, "workflow", "list", "orders", "--status", "completed").splitlines()
    assert [line.split("\t")[:2] for line in lines] == [["o1", "completed"], ["o2", "completed"]]

    # pages of 2, by the cursor the last page gave, newest first: every one once
    seen: list[str] = []
    after = ""
    for _ in range(4):
        page = json.loads(ok(shop, "actors", "orders", "--status", "waiting", "--order",
                             "newest", "--limit", "2", "--after", after, "--json"))
        seen += page["ids"]
        times = [a["updated_ms"] for a in page["actors"]]
        assert times == sorted(times, reverse=True)
        if page["next"] is None:
            break
        after = page["next"]
    assert sorted(seen) == waiting and len(seen) == 5

    # a time range: the states that began after the last start's
    starts = {a["id"]: a["updated_ms"] for a in json.loads(
        ok(shop, "actors", "orders", "--json"))["actors"]}
    since = max(starts[o] for o in waiting)
    late = ok(shop, "actors", "orders", "--since", str(since + 1), "--count")
    assert late == "3\n"  # o1 and o2 completed, o3 cancelled, after every start

    before = ok(shop, "actors", "orders", "-l")
    assert shop.server.proc is not None
    pids = children(shop.server.proc.pid)
    shop.server.kill9()
    wait_until(lambda: not any(Path(f"/proc/{p}").exists() for p in pids),
               what="the processes to follow their supervisor")
    shop = serve(make_server, workflow_wasm, data)
    assert ok(shop, "actors", "orders", "-l") == before  # rebuilt from the databases
    assert ok(shop, "actors", "orders", "--status", "waiting").split() == waiting


def test_bad_filters_are_refused_naming_them(
        make_server: MakeServer, workflow_wasm: dict[str, Path], tmp_path: Path) -> None:
    shop = serve(make_server, workflow_wasm, tmp_path / "data")
    bad = wkhost(shop, "actors", "orders", "--order", "newest", "--after", "o1")
    assert bad.returncode == 1 and "after" in bad.stderr and "MS/ID" in bad.stderr
    bad = wkhost(shop, "actors", "orders", "--since", "yesterday")
    assert bad.returncode == 2 and "--since" in bad.stderr
    bad = wkhost(shop, "actors", "orders", "--label", "nolabel")
    assert bad.returncode == 2 and "--label" in bad.stderr
    code, _, body = shop.server.request("GET", "/_wk/actors/orders?limit=0", operator=True)
    assert code == 400 and b"limit" in body
