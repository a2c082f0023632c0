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
