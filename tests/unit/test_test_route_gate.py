"""The front door's gate on a workflow's `test` route (host/net/test_route_gate.py): refused
(404, one line) by a host without a fake clock, for that exact path only; let through by
a host started with --fake-clock. tests/e2e/test_test_route_gate.py asks a real server."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from wkhost.net import test_route_gate
from wkhost.testing import FakeClock


def host(clock: FakeClock | None) -> Any:
    return SimpleNamespace(testing=SimpleNamespace(fake_clock=clock))


def test_a_host_without_a_fake_clock_refuses_the_route() -> None:
    got = test_route_gate.refused(host(None), "/wk-workflow/v1/test")
    assert got is not None and got.status == 404
    assert got.text is not None and "--fake-clock" in got.text and got.text.count("\n") == 1


@pytest.mark.parametrize("path", ["/wk-workflow/v1/status", "/wk-workflow/v1/test/",
                                  "/wk-workflow/v2/test", "/test", "/wk-workflow/v1/tests"])
def test_only_that_route_is_gated(path: str) -> None:
    assert test_route_gate.refused(host(None), path) is None


def test_a_host_with_a_fake_clock_lets_it_through() -> None:
    assert test_route_gate.refused(host(FakeClock(1_000)), "/wk-workflow/v1/test") is None
