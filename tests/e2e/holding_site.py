"""A site on 127.0.0.1 that holds its answers and counts how many requests it held at
once: overlap is asserted by that peak, never by wall time.

Each request is held until `want` requests are held together (then all of them are
answered), or `hold_s` passed: so requests that overlap are answered as soon as they all
came, and requests made one after another each wait `hold_s` and show a peak of 1. Every
request is kept (method, path, headers, body) for the tests of idempotency keys. A path
`/fail/N...` answers 500 to its first N requests of that path, then 200.
"""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class HoldingSite:
    port: int = 0
    want: int = 1
    hold_s: float = 10.0
    peak: int = 0
    held: int = 0
    seen: list[Seen] = field(default_factory=list)
    cond: threading.Condition = field(default_factory=threading.Condition)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def url(self, path: str) -> str:
        return f"http://{self.address}{path}"

    def reset(self, want: int, hold_s: float | None = None) -> None:
        with self.cond:
            self.want, self.peak = want, self.held
            if hold_s is not None:
                self.hold_s = hold_s
            self.seen.clear()

    def keys(self, prefix: str = "/") -> list[str | None]:
        """The Idempotency-Key of each request whose path starts with `prefix`."""
        with self.cond:
            return [s.headers.get("idempotency-key") for s in self.seen
                    if s.path.startswith(prefix)]

    def hold(self, seen: Seen) -> int:
        """Hold one request (see the module's doc): the status to answer."""
        with self.cond:
            self.seen.append(seen)
            failures = _failures(seen.path)
            earlier = sum(1 for s in self.seen if s.path == seen.path) - 1
            self.held += 1
            self.peak = max(self.peak, self.held)
            if self.held >= self.want:
                self.cond.notify_all()
            else:
                self.cond.wait_for(lambda: self.peak >= self.want, timeout=self.hold_s)
            self.held -= 1
        return 500 if earlier < failures else 200


def _failures(path: str) -> int:
    parts = path.split("/")
    if len(parts) > 2 and parts[1] == "fail" and parts[2].isdigit():
        return int(parts[2])
    return 0


@contextmanager
def holding_site(want: int = 1, hold_s: float = 10.0) -> Iterator[HoldingSite]:
    site = HoldingSite(want=want, hold_s=hold_s)

    class Handler(http.server.BaseHTTPRequestHandler):
        def _any(self) -> None:
            n = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(n) if n else b""
            seen = Seen(self.command, self.path,
                        {k.lower(): v for k, v in self.headers.items()}, body)
            status = site.hold(seen)
            answer = f"{self.command} {self.path}".encode()
            try:
                self.send_response(status)
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)
            except OSError:  # the host was killed while the request was held
                pass

        do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _any  # noqa: N815

        def log_message(self, *args: object) -> None:
            pass

    class Server(http.server.ThreadingHTTPServer):
        request_queue_size = 1024  # the default 5 drops a burst's SYNs (a second late)
        daemon_threads = True

    srv = Server(("127.0.0.1", 0), Handler)
    site.port = srv.server_address[1]
    threading.Thread(target=srv.serve_forever, daemon=True, name="holding-site").start()
    try:
        yield site
    finally:
        with site.cond:
            site.hold_s = 0
            site.want = 0
            site.cond.notify_all()
        srv.shutdown()
        srv.server_close()
