"""Emitted events and queries through `wkhost serve` and the CLI: a workflow emits at each
stage (tests/guests/wf_events.py); `wkhost workflow events` reads the stream from an
offset and `wkhost workflow query` answers from the state its journal replays to, before
and after it finishes, writing nothing (the instance's positions and events stay as they
were, and the event that would wake it is not taken by a query).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .conftest import MakeServer
from .server import REPO, Server

pytestmark = pytest.mark.e2e

TIMEOUT = 30.0


@pytest.fixture(scope="module")
def events_wasm(build_guest: Callable[[str], Path]) -> Path:
    return build_guest("wf_events")


def wk(server: Server, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "wkhost.cli", "workflow", *args,
           "--server", server.url, "--data", str(server.data)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd=REPO)


def ok(server: Server, *args: str) -> str:
    out = wk(server, *args)
    assert out.returncode == 0, (args, out.returncode, out.stdout, out.stderr)
    return out.stdout


def status(server: Server) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(ok(server, "status", "packing", "p1", "--json"))
    return doc


def wait_for(server: Server, pred: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        s = status(server)
        if pred(s):
            return s
        time.sleep(0.05)
    raise AssertionError(f"not reached in {TIMEOUT} s: {s}")


@pytest.mark.parametrize("mode", ["warm", "always-replay"])
def test_the_cli_reads_the_emitted_events_and_answers_a_query(
        make_server: MakeServer, events_wasm: Path, mode: str) -> None:
    """Also with a fresh instance for every event (`--always-fresh-instance`): each run
    and each query then replays from the stored journal, never the warm cache."""
    extra = ["--always-fresh-instance"] if mode == "always-replay" else []
    server = make_server({"packing": events_wasm}, access={"packing": "internal"},
                         extra=extra)
    ok(server, "start", "packing", "p1", "--input", json.dumps({"items": ["a", "b", "c"]}))
    s = wait_for(server, lambda s: s["waiting_for"] == ["ship"])

    events = json.loads(ok(server, "events", "packing", "p1", "--json"))
    assert [(e["offset"], e["name"], e["payload"], e["pos"]) for e in events] == [
        (0, "packed", {"item": "a", "n": 1}, 1), (1, "packed", {"item": "b", "n": 2}, 3),
        (2, "packed", {"item": "c", "n": 3}, 5)]
    assert {e["run_id"] for e in events} == {s["run_id"]}
    text = ok(server, "events", "packing", "p1", "--after", "2").splitlines()
    assert len(text) == 1 and text[0].split()[0] == "2" and "packed" in text[0]

    ok(server, "send-event", "packing", "p1", "ship", "--payload", '"ann"')
    # The alarm's run may not have come yet: a query then replays only to the wait and
    # takes nothing; either way it answers from the recorded journal.
    answer = json.loads(ok(server, "query", "packing", "p1", "progress", '{"detail": 1}'))
    assert answer["packed"] == ["A", "B", "C"] and answer["asked"] == {"detail": 1}
    assert answer["stage"] in ("waiting for ship", "shipped")

    done = wait_for(server, lambda s: s["state"] == "completed")
    assert done["output"] == ["A", "B", "C"]
    assert json.loads(ok(server, "query", "packing", "p1", "progress")) == {
        "packed": ["A", "B", "C"], "stage": "shipped", "asked": None}
    after = json.loads(ok(server, "events", "packing", "p1", "--after", "3", "--json"))
    assert [(e["offset"], e["name"], e["payload"]) for e in after] == [
        (3, "shipped", {"by": "ann"})]
    assert status(server)["positions"] == done["positions"]  # the queries wrote nothing

    unknown = wk(server, "query", "packing", "p1", "eta")
    assert unknown.returncode == 1 and "no-query" in unknown.stderr
    assert "registers no query 'eta' (it registers: progress)" in unknown.stderr
