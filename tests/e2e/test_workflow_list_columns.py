"""`wkhost workflow list` on a real server: each line says when the instance's state
began, when it started and, once finished, how long it ran; `--status` repeats for any
of several states; `--until` ends the range. All from the index: no event."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from . import workflow_support
from .conftest import MakeServer
from .server import REPO
from .workflow_support import HOUR, INTERNAL, ORDER, Shop, in_state

workflow_wasm = workflow_support.workflow_wasm  # the fixture, by name

TIME = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}Z"


def listed(shop: Shop, *args: str) -> list[str]:
    done = subprocess.run([sys.executable, "-m", "wkhost.cli", "workflow", "list", "orders",
                           *args, "--server", shop.server.url, "--data",
                           str(shop.server.data)], capture_output=True, text=True,
                          timeout=60, cwd=REPO)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_lines_say_when_each_started_and_how_long_it_ran(
        make_server: MakeServer, workflow_wasm: dict[str, Path]) -> None:
    actors = {name: workflow_wasm[name] for name in ("orders", "ledger", "app")}
    shop = Shop(make_server(actors=actors, access=INTERNAL))
    for oid in ("o1", "o2", "o3"):
        shop.admin.start("orders", oid, {**ORDER, "cool_off_ms": HOUR})
        shop.wait_for(oid, in_state("waiting"))
    shop.advance(1500)
    shop.admin.cancel("orders", "o2")
    shop.admin.terminate("orders", "o3")
    before = shop.server.events_run()

    lines = {line.split("\t")[0]: line for line in listed(shop)}
    assert re.fullmatch(rf"o1\twaiting\tsince {TIME}\tstarted {TIME}", lines["o1"]), lines
    cancelled = re.fullmatch(rf"o2\tcancelled\tsince ({TIME})\tstarted ({TIME})\tran "
                             r"(\d+\.\d\d) s", lines["o2"])
    assert cancelled is not None and float(cancelled[3]) >= 1.5, lines  # the clock moved
    assert [line.split("\t")[:2] for line in listed(shop, "--status", "cancelled",
                                                    "--status", "terminated")] == [
        ["o2", "cancelled"], ["o3", "terminated"]]
    assert listed(shop, "--until", "1") == []  # before any of them began
    assert shop.server.events_run() == before
