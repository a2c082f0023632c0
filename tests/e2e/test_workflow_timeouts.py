"""A step's timeout through a real `wkhost serve` (issue 27): each way an attempt can
overrun it is cut by the host at the attempt's deadline — pure CPU (a trap), a long SQL
statement, a slow fetch — recorded as a timed-out attempt, and retried; the next attempt
returns. The host clock is the tests' fake one, held still: what cuts is the host's real
deadline, and what the history says is the runner's reading of the cut.

One loop escapes the deadline: one that calls no function at all in the compiled
interpreter (`while True: pass`). wasmtime's generated code keeps the epoch deadline it
read when the running function was entered, and checks a lowered one only in the
functions it calls next; such a loop runs on until the event's own budget cuts it, which
is then recorded as a cut attempt and retried like any."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from wkhost.cli.client import WorkflowAdmin

from ..conftest import BuildGuest
from . import local_http
from .conftest import MakeServer
from .server import REPO

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def late_site() -> Iterator[str]:
    with local_http.late_site() as site:
        yield site


@pytest.fixture(scope="module")
def timeouts_wasm(build_guest: BuildGuest) -> Path:
    return build_guest("wf_timeouts")


def history(server: Any, id: str) -> list[dict[str, Any]]:
    cmd = [sys.executable, "-m", "wkhost.cli", "workflow", "steps", "t", id, "--attempts",
           "--json", "--server", server.url, "--data", str(server.data)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd=REPO)
    assert out.returncode == 0, out
    steps: list[dict[str, Any]] = json.loads(out.stdout)
    return list(steps[0]["history"])


def drive(server: Any, admin: WorkflowAdmin, id: str) -> Any:
    for _ in range(10):  # each retry waits 1 s of the fake clock
        status = admin.status("t", id)
        if status.is_finished:
            return status
        server.advance(1000)
    return admin.status("t", id)


@pytest.mark.parametrize("how", ["spin", "sql", "fetch"])
def test_an_overrun_is_cut_at_the_deadline_recorded_timed_out_and_retried(
        make_server: MakeServer, timeouts_wasm: Path, late_site: str, how: str) -> None:
    # The event's own budgets far past the timeout: only the step's deadline cuts.
    server = make_server({"t": timeouts_wasm}, access={},
                         extra=["--cpu-budget-ms", "20000", "--allow-http", late_site])
    admin = WorkflowAdmin(server.url, server.token)
    admin.start("t", "t1", {"how": how, "url": f"http://{late_site}/late"})
    server.advance(0)
    final = drive(server, admin, "t1")
    assert final.state == "completed", final
    assert final.output == {"attempt": 2, "deadline_set": True}
    got = history(server, "t1")
    assert [(a["attempt"], a["outcome"]) for a in got] == [(1, "timed-out"), (2, "returned")]
    assert got[0]["error"].startswith(
        "timed out: attempt 1 passed its timeout of 300 ms"), got[0]
    assert "lifecycle.narrow-deadline" in got[0]["error"], got[0]
    assert server.stop() == 0


def test_a_loop_that_calls_nothing_is_cut_by_the_events_budget_instead(
        make_server: MakeServer, timeouts_wasm: Path) -> None:
    server = make_server({"t": timeouts_wasm}, access={}, extra=["--cpu-budget-ms", "1000"])
    admin = WorkflowAdmin(server.url, server.token)
    admin.start("t", "t3", {"how": "pure"})
    server.advance(0)
    final = drive(server, admin, "t3")
    assert final.state == "completed" and final.output["attempt"] == 2, final
    got = history(server, "t3")
    assert [(a["attempt"], a["outcome"]) for a in got] == [(1, "cut"), (2, "returned")]
    assert got[0]["error"] == "the event used its CPU budget (--cpu-budget-ms)", got[0]


def test_every_attempt_overrunning_fails_the_step_as_timed_out(
        make_server: MakeServer, timeouts_wasm: Path) -> None:
    server = make_server({"t": timeouts_wasm}, access={}, extra=["--cpu-budget-ms", "20000"])
    admin = WorkflowAdmin(server.url, server.token)
    admin.start("t", "t2", {"how": "sql", "bad": 99})
    server.advance(0)
    final = drive(server, admin, "t2")
    assert final.state == "failed", final
    assert "timed out: attempt 4 passed its timeout of 300 ms" in (final.error or ""), final
    assert [a["outcome"] for a in history(server, "t2")] == ["timed-out"] * 4
    # The host served the instance throughout: a status read between its events.
    assert admin.status("t", "t2").state == "failed"
