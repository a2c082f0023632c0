"""A workflow's `test` route (a test's mocks, docs/workflow-protocol.md) is served only by
a host started with --fake-clock: any other host's front door answers 404 with a one-line
reason, whatever the method, before the actor sees the request. One real server, started
without --fake-clock (the Server of these tests always gives it)."""

from __future__ import annotations

import json
from pathlib import Path

from .conftest import _stop
from .server import Server


class RealClockServer(Server):
    def command(self) -> list[str]:
        return [a for a in super().command() if a != "--fake-clock"]


def test_a_host_without_a_fake_clock_refuses_the_test_route(tmp_path: Path,
                                                             probe_wasm: Path) -> None:
    server = RealClockServer(tmp_path / "data", {"probe": probe_wasm})
    try:
        server.start()
        for method in ("POST", "GET", "PUT"):
            status, _, body = server.request(method, "/probe/a/wk-workflow/v1/test", b"",
                                             operator=True)
            assert status == 404, body
            assert b"--fake-clock" in body and body.count(b"\n") == 1, body
        # Any other path, a neighbour's too, reaches the actor (the probe: no such route).
        for path in ("/probe/a/wk-workflow/v1/status", "/probe/a/wk-workflow/v1/tests"):
            status, _, body = server.request("POST", path, b"", operator=True)
            assert status == 404 and "no route" in json.loads(body)["error"], body
        status, _, body = server.request("GET", "/probe/a/whoami", operator=True)
        assert status == 200 and json.loads(body)["sender"] == "operator"
    finally:
        _stop(server)
