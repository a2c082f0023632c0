"""A throwaway HTTP server on 127.0.0.1 for the tests of guests' outgoing HTTP."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def local_http(handler: type[http.server.BaseHTTPRequestHandler]) -> Iterator[int]:
    """Serve `handler` on a free loopback port, yield the port, then stop."""
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        yield srv.server_address[1]
    finally:
        srv.shutdown()
        srv.server_close()


@contextmanager
def late_site(hold_s: float = 10.0) -> Iterator[str]:
    """A site on 127.0.0.1 whose every GET answers only after `hold_s` (or when the
    site closes): a fetch that outlasts a deadline. Yields "127.0.0.1:PORT"."""
    release = threading.Event()

    class Late(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            release.wait(hold_s)
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    with local_http(Late) as port:
        try:
            yield f"127.0.0.1:{port}"
        finally:
            release.set()
