"""Fixtures for the workflow runner's unit tests (plain CPython, fake host, fake clock).

Nothing here sleeps: time moves with `host.advance(ms)` / `host.clock.jump(ms)`.
"""

from __future__ import annotations

from typing import Any

import pytest
from wkguest.workflow import cbor
from wkguest.workflow.status import PREFIX
from wkguest.workflow.testing import FakeHost


@pytest.fixture
def host() -> FakeHost:
    return FakeHost()


@pytest.fixture(params=[False, True], ids=["warm", "always-replay"])
def any_host(request: pytest.FixtureRequest) -> FakeHost:
    """Both modes: a warm cache kept between events, and a fresh runner every event."""
    return FakeHost(always_replay=request.param)


class Raw:
    """Speak the protocol by hand: status code and decoded CBOR answer."""

    def __init__(self, host: FakeHost, cls: str) -> None:
        self.host, self.cls = host, cls

    def __call__(self, id: str, route: str, msg: Any = None, *, method: str = "POST",
                 sender: str = "actor") -> tuple[int, Any]:
        body = b"" if msg is None else cbor.dumps(msg)
        status, out = self.host.call(self.cls, id, method, PREFIX + route, body, sender)
        return status, cbor.loads(out)


@pytest.fixture
def raw(host: FakeHost) -> Any:
    return lambda cls: Raw(host, cls)


def run_one(host: FakeHost, fn: Any, ticks: int, tick_ms: int) -> Any:
    """Serve `fn` as class "w", start instance "1", and advance the clock `ticks` times
    by `tick_ms`, running what is due: its Status then."""
    host.serve("w", fn)
    c = host.client("w")
    c.start("1")
    for _ in range(ticks):
        host.advance(tick_ms)
    return c.status("1")
