"""Seeing why something failed, through a real `wkhost serve` (issue 41): each failure
of a workflow leaves one structured log line (a retried step, a step and the workflow
that failed, bad runs and the park after them), and is counted in the metrics; `wkhost
workflow steps --attempts --json` holds each failed attempt's traceback with the
workflow's own function names; a guest's uncaught ZeroDivisionError is the reason of its
trap, through the front door, `wkhost call` and an actor's call, and its traceback one log
record."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families
from wkhost.cli.client import WorkflowAdmin

from .conftest import MakeServer
from .server import REPO, Server

CLS = "shop"
ZERO = "the guest raised ZeroDivisionError: division by zero"


@pytest.fixture(scope="module")
def failures_wasm(build_guest: Any) -> Path:
    return build_guest("wf_failures")  # type: ignore[no-any-return]


def records(server: Server) -> list[dict[str, Any]]:
    return [json.loads(line) for line in server.log]


def told(server: Server, id: str) -> list[dict[str, Any]]:
    """The runner's records of instance `id` (core/told.py), in order."""
    return [d for d in records(server) if d.get("id") == id and "workflow_event" in d]


def cli(server: Server, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "wkhost.cli", *args, "--server", server.url,
                           "--data", str(server.data)],
                          capture_output=True, text=True, timeout=60, cwd=REPO)


def drive(server: Server, admin: WorkflowAdmin, id: str, state: str) -> Any:
    for _ in range(10):  # each backoff is 1 s of the fake clock
        st = admin.status(CLS, id)
        if st.state == state:
            return st
        server.advance(1000)
    return admin.status(CLS, id)


def scraped(server: Server) -> dict[str, float]:
    """The runner's counters and its steps' attempts, as /_wk/metrics has them."""
    status, _, body = server.request("GET", "/_wk/metrics", operator=True)
    assert status == 200
    got = {(s.name, tuple(sorted(s.labels.items()))): s.value
           for fam in text_string_to_metric_families(body.decode()) for s in fam.samples}
    c, charge = ("class", CLS), ("step", "charge")
    return {"started": got[("wkguest_workflow_started_total", (c,))],
            **{state: got[("wkguest_workflow_finished_total", (c, ("state", state)))]
               for state in ("completed", "failed")},
            "parked": got[("wkguest_workflow_parked_total", (c,))],
            "retries of charge": got[("wkguest_workflow_step_retries_total", (c, charge))],
            "charge settled": got[("wkguest_workflow_step_attempts_count", (c, charge))],
            "charge's attempts": got[("wkguest_workflow_step_attempts_sum", (c, charge))]}


def test_each_failure_of_a_workflow_is_one_line_with_its_fields(
        make_server: MakeServer, failures_wasm: Path) -> None:
    server = make_server({CLS: failures_wasm}, access={}, extra=["--log-format", "json"])
    admin = WorkflowAdmin(server.url, server.token)
    for id, inp in (("flaky", {"flaky": 1}), ("broken", {"broken": True}),
                    ("body", {"body": True})):
        admin.start(CLS, id, inp)
    assert drive(server, admin, "flaky", "completed").output == {"charge": "charged"}
    assert drive(server, admin, "broken", "failed").state == "failed"
    assert drive(server, admin, "body", "parked").state == "parked"
    flaky_run = admin.status(CLS, "flaky").run_id
    counted = scraped(server)  # the same, counted (core/counted.py)
    assert counted == {"started": 3, "completed": 1, "failed": 1, "parked": 1,
                       "retries of charge": 3, "charge settled": 2,
                       "charge's attempts": 5}, counted
    assert server.stop() == 0

    (retried,) = told(server, "flaky")
    assert (retried["level"], retried["logger"]) == ("info", f"wkhost.guest.{CLS}")
    assert retried["workflow_event"] == "step-retried" and retried["class"] == CLS
    assert (retried["pos"], retried["step"], retried["attempt"]) == ("0", "charge", "1")
    assert retried["error"] == "ConnectionError: the bank refused attempt 1"
    assert retried["run_id"] == flaky_run

    broken = told(server, "broken")
    assert [d["workflow_event"] for d in broken] == [
        "step-retried", "step-retried", "step-failed", "failed"]
    failed = broken[-1]
    assert failed["level"] == "warning" and failed["msg"].startswith(
        "[shop/broken] workflow failed: step 'charge' failed after 3 attempt(s): "
        "ConnectionError: the bank refused attempt 3"), failed
    assert len({d["run_id"] for d in broken}) == 1

    body = told(server, "body")
    assert [d["workflow_event"] for d in body] == ["bad-run", "parked"]
    assert body[0]["error"] == ("the workflow function raised ZeroDivisionError: "
                                "division by zero")
    assert body[1]["level"] == "warning" and "ZeroDivisionError" in body[1]["error"]


def test_steps_attempts_json_holds_each_failed_attempts_traceback(
        make_server: MakeServer, failures_wasm: Path) -> None:
    server = make_server({CLS: failures_wasm}, access={})
    admin = WorkflowAdmin(server.url, server.token)
    admin.start(CLS, "broken", {"broken": True})
    assert drive(server, admin, "broken", "failed").state == "failed"
    out = cli(server, "workflow", "steps", CLS, "broken", "--attempts", "--json")
    assert out.returncode == 0, out.stderr
    (charge,) = json.loads(out.stdout)
    history = charge["history"]
    assert [a["outcome"] for a in history] == ["failed"] * 3
    for n, a in enumerate(history, 1):
        tb = a["traceback"].splitlines()
        assert tb[0] == "Traceback (most recent call last):", tb
        assert "in attempt" in tb[1], tb  # the workflow's own frame first
        assert any(line.endswith("in _call_bank") for line in tb), tb
        assert tb[-1] == f"ConnectionError: the bank refused attempt {n}", tb
    table = cli(server, "workflow", "steps", CLS, "broken", "--attempts")
    assert table.returncode == 0 and "in _call_bank" in table.stdout, table


def test_a_guests_zero_division_is_the_reason_everywhere(make_server: MakeServer) -> None:
    server = make_server(extra=["--log-format", "json"])
    status, body = server.actor("probe", "z1", "POST", "/divide")
    assert status == 500 and ZERO in str(body), (status, body)
    called = server.actor("probe", "a1", "POST", "/call",
                          {"cls": "probe", "id": "z2", "path": "/divide"})
    assert called[0] == 200 and ZERO in called[1]["error"], called
    out = cli(server, "call", "probe/z3", "/divide", "-X", "POST")
    assert out.returncode != 0 and ZERO in out.stdout + out.stderr, out
    assert server.stop() == 0
    traps = [d for d in records(server) if d.get("id") == "z1" and "reason" in d]
    assert [d["reason"] for d in traps] == [ZERO]
    # Its traceback: one record, without the runtime's panic lines.
    guest = [d for d in records(server)
             if d.get("id") == "z1" and d["logger"] == "wkhost.guest.probe"]
    assert len(guest) == 1, guest
    assert guest[0]["msg"].endswith("ZeroDivisionError: division by zero"), guest
    assert "in divide" in guest[0]["msg"]
    assert not any("panicked" in line or "RUST_BACKTRACE" in line for line in server.log)
