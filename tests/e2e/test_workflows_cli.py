"""`wkhost workflow ...` against a running server: start, status, send-event, steps, list,
cancel, and its refusals (exit 1 with the reason on stderr). The exit-code contract as a
whole: tests/e2e/test_cli_contract.py."""

from __future__ import annotations

import json
import subprocess
import sys
import time

from . import workflow_support
from .server import REPO
from .workflow_support import (
    HOUR,
    ORDER,
    Shop,
    ShopFactory,
    expected_output,
    finished,
    in_state,
    wait_until,
    waiting_for,
)

# the fixtures, by name (tests/e2e/conftest.py is shared with other suites)
workflow_wasm = workflow_support.workflow_wasm
shop_factory = workflow_support.shop_factory


def wk(shop: Shop, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "wkhost.cli", "workflow", *args,
           "--server", shop.server.url, "--data", str(shop.server.data)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd=REPO)


def ok(shop: Shop, *args: str) -> str:
    out = wk(shop, *args)
    assert out.returncode == 0, (args, out.returncode, out.stdout, out.stderr)
    return out.stdout


def when(ms: int) -> str:
    """How the CLI prints a time (UTC, to the millisecond)."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(ms / 1000)) + f".{ms % 1000:03d}Z"


def list_lines(out: str) -> list[list[str]]:
    """`workflow list`'s lines, as [id, state] (the third column is a time)."""
    lines = out.splitlines()
    assert all(line.split("\t")[2].startswith("since ") for line in lines), lines
    return [line.split("\t")[:2] for line in lines]


def test_the_workflow_cli(shop_factory: ShopFactory) -> None:
    shop = shop_factory()
    c1 = json.dumps({**ORDER, "cool_off_ms": 0})
    assert ok(shop, "start", "orders", "c1", "--input", c1) == "orders/c1: running, 0 positions\n"
    s = shop.wait_for("c1", waiting_for("approved"))
    assert ok(shop, "status", "orders", "c1") == (
        f"orders/c1: waiting, 3 positions, waiting for approved, wakes at {when(s['wake_at'])}\n")
    as_json = json.loads(ok(shop, "status", "orders", "c1", "--json"))
    assert as_json == {"state": "waiting", "wake_at": s["wake_at"], "waiting_for": ["approved"],
                       "output": None, "error": None, "positions": 3, "run_id": s["run_id"],
                       "runs": 1}

    table = ok(shop, "steps", "orders", "c1").splitlines()
    assert table[0].split() == ["pos", "kind", "name", "state", "tries", "detail"]
    rows = [line.split()[:5] for line in table[1:]]
    assert rows == [["0", "step", "reserve", "done", "1"], ["1", "sleep", "cool-off", "done", "0"],
                    ["2", "wait", "approved", "waiting", "0"]]
    assert f"wake at {when(s['wake_at'])}" in table[3]
    assert json.loads(ok(shop, "steps", "orders", "c1", "--json")) == shop.steps("c1")

    ok(shop, "start", "orders", "c2", "--input", json.dumps({**ORDER, "cool_off_ms": HOUR}))
    shop.wait_for("c2", in_state("waiting"))
    # list reads the host's index (each line: id, state, since when): it wakes no one
    assert list_lines(ok(shop, "list", "orders", "--status", "waiting")) == [
        ["c1", "waiting"], ["c2", "waiting"]]
    assert ok(shop, "list", "orders", "--status", "completed") == ""

    assert ok(shop, "send-event", "orders", "c1", "approved", "--payload", '{"by": "cli"}') == (
        "orders/c1: event 'approved' recorded\n")
    shop.drive("c1", finished)
    lines = ok(shop, "status", "orders", "c1").splitlines()
    assert lines[0] == "orders/c1: completed, 5 positions"
    assert lines[1].startswith("  output: ")
    assert json.loads(lines[1].removeprefix("  output: ")) == expected_output("c1", by="cli")
    table = ok(shop, "steps", "orders", "c1").splitlines()
    assert table[3].split() == ["2", "wait", "approved", "done", "0"]  # its deadline unused
    assert all(line == line.rstrip() for line in table), table

    assert ok(shop, "cancel", "orders", "c2") == "orders/c2: cancelled, 2 positions\n"
    assert shop.status("c2")["state"] == "cancelled"
    assert list_lines(ok(shop, "list", "orders")) == [["c1", "completed"], ["c2", "cancelled"]]
    assert list_lines(ok(shop, "list", "orders", "--status", "cancelled")) == [["c2", "cancelled"]]
    listed = json.loads(ok(shop, "list", "orders", "--status", "completed", "--json"))
    assert [(x["id"], x["state"], "output" in x) for x in listed] == [("c1", "completed", False)]

    # start is idempotent while the instance is kept: the same run, nothing new
    run_id = shop.status("c1")["run_id"]
    again = ok(shop, "start", "orders", "c1", "--input", c1).splitlines()
    assert again[0] == "orders/c1: completed, 5 positions"
    assert json.loads(again[1].removeprefix("  output: ")) == expected_output("c1", by="cli")
    assert shop.status("c1")["run_id"] == run_id

    # refusals: exit 1, the reason on stderr; bad usage: exit 2
    out = wk(shop, "send-event", "orders", "c1", "approved")
    assert out.returncode == 1 and "finished" in out.stderr, out
    out = wk(shop, "status", "orders", "ghost")
    assert out.returncode == 1 and "unknown" in out.stderr and out.stdout == "", out
    assert "ghost" not in shop.actor_ids()
    out = wk(shop, "start", "orders", "c3", "--input", "{not json")
    assert out.returncode == 2 and "not JSON" in out.stderr, out


def test_wait_answers_when_the_instance_finishes(shop_factory: ShopFactory) -> None:
    """`start --wait` and `status --wait` answer once the instance has finished (the
    host holds their requests), or with the status of the moment their time is up."""
    shop = shop_factory()
    args = ["--server", shop.server.url, "--data", str(shop.server.data)]
    base = [sys.executable, "-m", "wkhost.cli", "workflow"]
    order = json.dumps({**ORDER, "cool_off_ms": 0})
    procs: list[subprocess.Popen[str]] = []

    def cli(*cmd: str) -> subprocess.Popen[str]:
        procs.append(subprocess.Popen([*base, *cmd, *args], stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True, cwd=REPO))
        return procs[-1]

    started = cli("start", "orders", "w1", "--input", order, "--wait", "--timeout", "60")
    try:
        wait_until(lambda: shop.wk("w1", "status")[0] == 200, what="the CLI started w1")
        shop.wait_for("w1", waiting_for("approved"))
        followed = cli("status", "orders", "w1", "--wait", "--json")
        time.sleep(0.3)
        assert started.poll() is None and followed.poll() is None  # both still wait
        assert shop.approve("w1") == (200, {"sent": "approved"})
        shop.drive("w1", finished)
        out, err = started.communicate(timeout=60)
        assert started.returncode == 0, err
        lines = out.splitlines()
        assert lines[0] == "orders/w1: completed, 5 positions"
        assert json.loads(lines[1].removeprefix("  output: ")) == expected_output("w1")
        out, err = followed.communicate(timeout=60)
        assert followed.returncode == 0, err
        assert json.loads(out)["state"] == "completed"
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.communicate()

    # the time is up (the fake clock never reaches the cool-off's end): the status of
    # that moment, and exit 4 with why
    ok(shop, "start", "orders", "w2", "--input", json.dumps({**ORDER, "cool_off_ms": HOUR}))
    out = wk(shop, "status", "orders", "w2", "--wait", "--timeout", "0.5")
    assert out.returncode == 4 and out.stdout.startswith("orders/w2: waiting"), out
    assert "orders/w2: timed out: not finished after --timeout 0.5 s" in out.stderr, out
    out = wk(shop, "status", "orders", "w2", "--wait", "--timeout", "0")
    assert out.returncode == 2 and "--timeout" in out.stderr, out


def test_a_start_that_carries_an_event(shop_factory: ShopFactory) -> None:
    """`workflow start --event NAME --payload JSON` (signal-with-start): the order is
    created with "approved" already there, so its wait takes it at once; a finished
    instance refuses the event (exit 1), and nothing is delivered."""
    shop = shop_factory()
    order = json.dumps({**ORDER, "cool_off_ms": 0})
    ok(shop, "start", "orders", "e1", "--input", order, "--event", "approved",
       "--payload", '{"by": "cli"}')
    shop.drive("e1", finished)
    assert shop.status("e1")["output"] == expected_output("e1", by="cli")
    out = wk(shop, "start", "orders", "e1", "--input", order, "--event", "approved")
    assert out.returncode == 1 and "finished" in out.stderr, out
    assert shop.status("e1")["events_pending"] == 0
