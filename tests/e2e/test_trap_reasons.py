"""Why an event was cut reaches the workflow through a real `wkhost serve`
(`lifecycle.last-trap`): the instance's status says it while it retries, the final
failure quotes it, and the host logs it at warning with the class and the id, the
guest's own traceback too."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from wkhost.cli.client import WorkflowAdmin

from .conftest import MakeServer


@pytest.fixture(scope="module")
def traps_wasm(build_guest: Any) -> Path:
    return build_guest("wf_traps")  # type: ignore[no-any-return]


def run_until_failed(server: Any, admin: WorkflowAdmin, oid: str) -> Any:
    for _ in range(10):  # each attempt's backoff is 1 s of the fake clock
        status = admin.status("cut", oid)
        if status.state == "failed":
            return status
        server.advance(1000)
    return admin.status("cut", oid)


CPU = "the event used its CPU budget (--cpu-budget-ms)"


@pytest.mark.parametrize("inp, reason, on_attempt", [
    ({"spin": True}, CPU, CPU),
    # The guest reports the exception it traps on: the host's reason names it (not
    # wasm's words), and so does the attempt.
    ({"exit": 3}, "the guest raised SystemExit: 3", "the guest raised SystemExit: 3"),
    ({"abort": True}, "the guest raised wf_traps.Abort: wf_traps: abort requested",
     "the guest raised wf_traps.Abort: wf_traps: abort requested"),
])
def test_the_cut_is_in_the_status_the_failure_and_the_log(
        make_server: MakeServer, traps_wasm: Path, inp: dict[str, Any], reason: str,
        on_attempt: str) -> None:
    server = make_server({"cut": traps_wasm}, access={},
                         extra=["--cpu-budget-ms", "50"])
    admin = WorkflowAdmin(server.url, server.token)
    admin.start("cut", "c1", inp)
    server.advance(0)
    status = admin.status("cut", "c1")
    assert status.state != "failed", status
    assert f"its last event was cut: {reason}" in (status.error or ""), status
    final = run_until_failed(server, admin, "c1")
    assert final.state == "failed", final
    assert f"attempt 2 was cut: {on_attempt}" in (final.error or ""), final.error
    assert "none recorded" not in (final.error or "")
    assert server.stop() == 0
    cuts = [line for line in server.log
            if "level=warning" in line and "cut/c1: its alarm event trapped" in line]
    assert cuts and reason in cuts[0], server.log[-20:]
    if "abort" in inp:  # the guest's traceback, at warning too
        assert any("level=warning" in line and "logger=wkhost.guest.cut" in line
                   and "Abort: wf_traps: abort requested" in line
                   for line in server.log), server.log[-20:]


@pytest.mark.parametrize("mistake, named", [
    ("option", "wf.step('work'): unknown step option(s) 'timeout_secs'"),
    ("type", "wf.step('work'): step option 'backoff_ms' must be a whole number"),
    ("sleep", "wf.sleep('nap') must be 0 or more milliseconds, not -5000"),
])
def test_a_mistake_in_the_code_parks_at_once_naming_it(
        make_server: MakeServer, traps_wasm: Path, mistake: str, named: str) -> None:
    """Not retried as a transient failure: parked in its first run (a mistake in the code
    is not the workflow's own failure), with no attempt of the step made (Hardening II,
    item 3; Workflows II, item 3)."""
    server = make_server({"cut": traps_wasm}, access={})
    admin = WorkflowAdmin(server.url, server.token)
    admin.start("cut", "m1", {"mistake": mistake})
    server.advance(0)
    status = admin.status("cut", "m1")
    assert status.state == "parked", status
    assert named in (status.error or ""), status.error
    assert admin.steps("cut", "m1") == []
