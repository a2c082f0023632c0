"""A guest's outgoing HTTP through a real server, to a real local server."""

from __future__ import annotations

import http.server
import socket
from collections.abc import Iterator

import pytest

from .conftest import MakeServer
from .local_http import local_http


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802
        if self.path == "/cut":
            self.send_response(200)
            self.send_header("Content-Length", "1000")
            self.end_headers()
            self.wfile.write(b"only part")
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        body = b"hello from " + self.path.encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def local_site() -> Iterator[str]:
    with local_http(_Handler) as port:
        yield f"127.0.0.1:{port}"


@pytest.fixture
def silent_port() -> Iterator[int]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    yield sock.getsockname()[1]
    sock.close()


def test_fetch_ok_timeout_refused_and_cut(make_server: MakeServer, local_site: str,
                                         silent_port: int) -> None:
    s = make_server(extra=["--allow-http", local_site,
                           "--allow-http", f"127.0.0.1:{silent_port}"])
    status, body = s.actor("probe", "f", "POST", "/fetch", {"url": f"http://{local_site}/x"})
    assert body["status"] == 200 and body["body"] == "hello from /x"

    status, body = s.actor("probe", "f", "POST", "/fetch",
                           {"url": f"http://127.0.0.1:{silent_port}/", "timeout_ms": 300})
    assert body["error_kind"] == "timeout"

    for refused in ["http://127.0.0.1:1/", "http://169.254.169.254/latest/meta-data/",
                    "http://10.0.0.1/"]:
        status, body = s.actor("probe", "f", "POST", "/fetch", {"url": refused})
        assert body["error_kind"] == "denied", (refused, body)

    status, body = s.actor("probe", "f", "POST", "/fetch", {"url": f"http://{local_site}/cut"})
    assert body["error_kind"] == "incomplete", body


def test_nothing_is_allowed_by_default(make_server: MakeServer, local_site: str) -> None:
    s = make_server()
    status, body = s.actor("probe", "f", "POST", "/fetch", {"url": f"http://{local_site}/x"})
    assert body["error_kind"] == "denied"
