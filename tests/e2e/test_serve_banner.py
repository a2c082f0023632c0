"""What `wkhost serve` prints once it takes requests, and what it serves besides the actors:
the console's address follows `listening on`; `--no-console` and `--no-metrics` leave
their routes out, in one process and in several."""

from __future__ import annotations

import signal

import pytest

from .conftest import MakeServer
from .server import Server

pytestmark = pytest.mark.e2e


def rest_of_stdout(server: Server) -> list[str]:
    """The lines printed after `listening on`, read to the end once the server stopped."""
    assert server.proc is not None and server.proc.stdout is not None
    server.proc.send_signal(signal.SIGTERM)
    lines = server.proc.stdout.read().splitlines()
    assert server.stop() == 0
    return lines


def status_of(server: Server, path: str) -> int:
    status, _, _ = server.request("GET", path, operator=True)
    return status


@pytest.mark.parametrize("processes", ["1", "2"])
def test_the_banner_says_where_the_console_is(make_server: MakeServer, processes: str) -> None:
    server = make_server(extra=["--processes", processes])
    assert status_of(server, "/_wk/console/") == 200
    assert status_of(server, "/_wk/metrics") == 200
    token_file = server.data / "_host" / "admin-token"
    assert rest_of_stdout(server)[0] == (
        f"wkhost: console at {server.url}/_wk/console/ (log in with the admin token in "
        f"{token_file})")


@pytest.mark.parametrize("processes", ["1", "2"])
def test_the_console_and_the_metrics_route_can_be_left_out(make_server: MakeServer,
                                                           processes: str) -> None:
    server = make_server(extra=["--processes", processes, "--no-console", "--no-metrics"])
    for path in ("/_wk/console/", "/_wk/console/login", "/_wk/metrics"):
        assert status_of(server, path) == 404, path
    assert status_of(server, "/_wk/health") == 200
    status, _, body = server.request("GET", "/probe/a/now")
    assert status == 200, body  # the actors are served as before
    assert not any("console" in line for line in rest_of_stdout(server))
