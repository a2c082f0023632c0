"""The audit log through a real `wkhost serve`: the operator's actions (start, send-event,
cancel, pause, resume, terminate, a bulk's note) recorded with their answers, refusals
too; reads, the public's requests and an actor's calls not recorded; `wkhost audit`'s
filters, text, JSON and pages; the log kept across a kill -9; with `--processes 2`, each
action once, whichever process the client reached, read from either."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from wkhost.cli.audit import note

from . import workflow_support
from .conftest import MakeServer
from .server import REPO, Server
from .workflow_support import INTERNAL, ORDER, Shop, finished, in_state, waiting_for

workflow_wasm = workflow_support.workflow_wasm  # the fixture, by name


def serve(make_server: MakeServer, wasm: dict[str, Path], data: Path,
          extra: list[str] | None = None) -> Shop:
    actors = {"orders": wasm["orders"], "ledger": wasm["ledger"], "app": wasm["app"]}
    return Shop(make_server(actors=actors, access=INTERNAL, data=data, extra=extra))


def wk(server: Server, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "wkhost.cli", *args, "--server", server.url,
           "--data", str(server.data)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd=REPO)


def audit(server: Server, *args: str) -> dict[str, Any]:
    out = wk(server, "audit", "--json", *args)
    assert out.returncode == 0, (args, out.returncode, out.stdout, out.stderr)
    doc: dict[str, Any] = json.loads(out.stdout)
    return doc


def rows(server: Server, *args: str) -> list[tuple[str, str, int, Any]]:
    """(action, target, status, state) of each entry on the class orders, newest first."""
    doc = audit(server, "--target", "orders", *args)
    return [(e["action"], e["target"], e["status"], e["state"]) for e in doc["entries"]]


def test_operator_actions_are_recorded_and_read_back(make_server: MakeServer,
                                                     workflow_wasm: dict[str, Path],
                                                     tmp_path: Path) -> None:
    shop = serve(make_server, workflow_wasm, tmp_path / "data")
    s = shop.server
    c1 = json.dumps({**ORDER, "cool_off_ms": 0})
    assert wk(s, "workflow", "start", "orders", "c1", "--input", c1).returncode == 0
    shop.wait_for("c1", waiting_for("approved"))
    assert wk(s, "workflow", "send-event", "orders", "c1", "approved",
              "--payload", '{"by": "ann"}').returncode == 0
    shop.wait_for("c1", finished)
    assert wk(s, "workflow", "start", "orders", "c2", "--input", c1).returncode == 0
    shop.wait_for("c2", waiting_for("approved"))
    assert wk(s, "workflow", "cancel", "orders", "c2").returncode == 0
    refused = wk(s, "workflow", "send-event", "orders", "nope", "approved")
    assert refused.returncode == 1
    for read in (["status", "orders", "c1"], ["steps", "orders", "c1"], ["list", "orders"],
                 ["events", "orders", "c1"]):  # reads: not recorded
        assert wk(s, "workflow", *read).returncode == 0
    shop.app_start("pub1", cool_off_ms=0)  # the public's, and the app actor's call: neither
    shop.wait_for("pub1", in_state("waiting", "completed"))

    assert rows(s) == [("event", "orders/nope", 404, None),
                       ("cancel", "orders/c2", 200, "cancelled"),
                       ("start", "orders/c2", 200, "running"),
                       ("event", "orders/c1", 200, None),
                       ("start", "orders/c1", 200, "running")]
    entries = audit(s, "--target", "orders/c1")["entries"]
    assert [e["result"] for e in entries] == ["events_pending=1", "created"]
    assert entries[0]["detail"] == {"name": "approved", "payload": "<dict>"}
    assert entries[0]["path"] == "/wk-workflow/v1/event"
    nope = audit(s, "--target", "orders/nope")["entries"][0]
    assert nope["result"].startswith("unknown: no such workflow instance")
    assert rows(s, "--action", "send-event") == [("event", "orders/nope", 404, None),
                                                 ("event", "orders/c1", 200, None)]
    assert rows(s, "--since", "1h") == rows(s)  # counted back on the server's clock
    assert rows(s, "--since", str(shop.now() + 1)) == []

    text = wk(s, "audit", "--target", "orders/c2").stdout.splitlines()
    assert [line.split()[2:7] for line in text] == [
        ["admin", "cancel", "orders/c2", "200", "cancelled"],
        ["admin", "start", "orders/c2", "200", "running"]]

    note(s.url, s.token, "bulk cancel --status waiting (0 instances)", "orders")
    [line] = audit(s, "--action", "note")["entries"]
    assert (line["target"], line["note"]) == ("orders", "bulk cancel --status waiting "
                                                         "(0 instances)")

    first = wk(s, "audit", "--target", "orders", "--limit", "2")
    assert len(first.stdout.splitlines()) == 2
    cursor = first.stderr.split("--before ", 1)[1].split()[0]
    rest = audit(s, "--target", "orders", "--before", cursor)["entries"]
    assert [e["action"] for e in rest] == ["cancel", "start", "event", "start"]  # after note, nope

    # The routes added since the log was written are recorded as they are, by route.
    code, _ = shop.wk("c3", "start", {"input": {**ORDER, "cool_off_ms": 0}})
    assert code == 200
    shop.wait_for("c3", waiting_for("approved"))
    for move in (["pause"], ["resume"], ["terminate", "--reason", "test"]):
        wk(s, "workflow", move[0], "orders", "c3", *move[1:])  # exit codes: ops's contract
    got = rows(s, "--target", "orders/c3")
    assert [(action, status) for action, _, status, _ in got] == [
        ("terminate", 200), ("resume", 200), ("pause", 200), ("start", 200)]
    assert got[0][3] == "terminated" and got[1][3] != "paused" and got[2][3] == "paused"
    assert audit(s, "--target", "orders/c3")["entries"][0]["detail"] == {"reason": "test"}

    status, _, body = s.request("GET", "/_wk/audit")  # the public
    assert status == 403 and b"for operators" in body

    before = rows(s)  # a read: every row before it is written (and committed)
    s.kill9()
    again = serve(make_server, workflow_wasm, tmp_path / "data")
    assert rows(again.server) == before  # kept across a kill -9 and a restart
    bad = wk(again.server, "audit", "--since", "yesterday")
    assert bad.returncode == 2 and "--since: 'yesterday' is not a time" in bad.stderr


def test_with_two_processes_each_action_is_recorded_once(make_server: MakeServer,
                                                         workflow_wasm: dict[str, Path],
                                                         tmp_path: Path) -> None:
    """o1 is process 1's, o2 and o3 process 0's (tests/e2e/test_processes.py): a client
    reaching the other one is passed on, and only the process it reached records it."""
    shop = serve(make_server, workflow_wasm, tmp_path / "data", ["--processes", "2"])
    s = shop.server
    for oid in ("o1", "o2", "o3"):
        code, body = shop.wk(oid, "start", {"input": {**ORDER, "cool_off_ms": 0}})
        assert code == 200, body
    for oid in ("o1", "o2"):
        shop.wait_for(oid, waiting_for("approved"))
        code, _ = shop.wk(oid, "cancel")
        assert code == 200
    for _ in range(4):  # new connections: either process may take each
        got = rows(s)
        assert sorted(got) == sorted([("start", f"orders/{o}", 200, "running")
                                      for o in ("o1", "o2", "o3")]
                                     + [("cancel", f"orders/{o}", 200, "cancelled")
                                        for o in ("o1", "o2")])
        assert got[:2] == [("cancel", "orders/o2", 200, "cancelled"),
                           ("cancel", "orders/o1", 200, "cancelled")]
    doc = audit(s, "--target", "orders")
    assert doc["unflushed"] == [] and {e["process"] for e in doc["entries"]} <= {0, 1}
