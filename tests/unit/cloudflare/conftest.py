"""Fixtures for the Cloudflare-shaped API's unit tests: the FakeHost in both modes and a
binding over it. Nothing sleeps: time moves with `host.advance(ms)`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest
from wkguest.cloudflare import Workflow, WorkflowEntrypoint, workflow_function
from wkguest.workflow import Config
from wkguest.workflow.testing import FakeBackend, FakeHost

CLS = "flow"
SECOND = 1000
MINUTE = 60 * SECOND
DAY = 86_400_000

Serve = Callable[..., Workflow]


@pytest.fixture(params=[False, True], ids=["warm", "always-replay"])
def any_host(request: pytest.FixtureRequest) -> FakeHost:
    """Both modes: a warm cache kept between events, and a fresh runner every event."""
    return FakeHost(always_replay=request.param)


def binding(host: FakeHost, cls: str = CLS) -> Workflow:
    return Workflow(cls, transport=lambda id, m, p, b: host.call(cls, id, m, p, b))


@pytest.fixture
def serve(any_host: FakeHost) -> Serve:
    """`serve(Entrypoint, config=None, env=None)` on the host as class "flow": its binding."""

    def make(cls: type[WorkflowEntrypoint], config: Config | None = None,
             env: Mapping[str, Any] | None = None, name: str = CLS) -> Workflow:
        any_host.serve(name, workflow_function(cls, env), config)
        return binding(any_host, name)

    return make


def backend(host: FakeHost, id: str, cls: str = CLS) -> FakeBackend:
    return host.instance(cls, id).backend


def journal(host: FakeHost, id: str, cls: str = CLS) -> list[tuple[Any, ...]]:
    """(pos, kind, name, attempts) of each recorded position."""
    return list(backend(host, id, cls).rows(
        "SELECT pos, kind, name, attempts FROM _wk_wf_step ORDER BY pos"))
