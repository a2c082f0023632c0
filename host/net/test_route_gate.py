"""The front door's gate on wk-workflow/v1's `test` route: a test's mocks, reads and dry
replays of a workflow instance (docs/workflow-protocol.md) reach an actor only through a
host started with `--fake-clock`, a test's host. Any other host answers 404, running
nothing, whatever the method. Actor-to-actor calls never get the route answered (it is
the operator's)."""

from __future__ import annotations

from aiohttp import web

from ..core.host import Host
from .operator import plain

PATH = "/wk-workflow/v1/test"
REFUSED = ("wk-workflow/v1/test (a test's route) is only served by a host started with "
           "--fake-clock")


def refused(host: Host, path: str) -> web.Response | None:
    """The 404 for a request to an actor's `path`, if this host does not serve it."""
    if path == PATH and host.testing.fake_clock is None:
        return plain(404, REFUSED)
    return None
