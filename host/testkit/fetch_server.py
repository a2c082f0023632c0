"""The test's answers to the actors' fetches: one dispatch by URL prefix (`Fetches`),
called in process by local.py and, for the sandbox, from a server on 127.0.0.1 that the
host sends every fetch to (`wkhost serve --fetch-via`, host/fetch/via.py)."""

from __future__ import annotations

import threading
import traceback
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from wkguest.types import Response

from ..fetch.via import ERROR_HEADER, URL_HEADER
from .guest import CallFailed, Fetch

FetchHandler = Callable[[Fetch], Response]


class Fetches:
    """The handlers, by URL prefix, first match first; and what they raised."""

    def __init__(self) -> None:
        self.handlers: list[tuple[str, FetchHandler]] = []
        self.raised: list[str] = []  # each handler's exception, as a traceback

    def answer(self, req: Fetch) -> Response:
        """The answer to `req`. Raises CallFailed: DENIED when no prefix matches, CONNECT
        when the handler raised (kept in `raised`, for the test to see)."""
        for prefix, handler in self.handlers:
            if req.url.startswith(prefix):
                try:
                    return handler(req)
                except Exception as e:
                    self.raised.append(traceback.format_exc())
                    raise CallFailed("CONNECT", f"the test's fetch handler for {prefix} "
                                     f"raised {type(e).__name__}: {e}") from None
        raise CallFailed("DENIED", f"no fetch handler of the test answers {req.url} "
                         "(kit.on_fetch(url_prefix, answer))")


class FetchServer:
    """`Fetches` behind HTTP on 127.0.0.1, for the sandbox."""

    def __init__(self) -> None:
        self.fetches = Fetches()
        self.handlers = self.fetches.handlers
        self._server: ThreadingHTTPServer | None = None

    def start(self) -> str:
        """Listen on a free port of 127.0.0.1; its URL."""
        fetches = self.fetches

        class One(BaseHTTPRequestHandler):
            def _any(self) -> None:
                size = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(size) if size else b""
                headers = [(k, v) for k, v in self.headers.items()
                           if k.lower() not in (URL_HEADER, "host", "content-length",
                                                "connection", "user-agent")]
                req = Fetch(self.command, self.headers.get(URL_HEADER, ""), headers, body,
                            None)
                try:
                    r = fetches.answer(req)
                except CallFailed as e:
                    r = Response(599, [(ERROR_HEADER, e.kind.lower())], str(e).encode())
                self.send_response(r.status)
                for k, v in r.headers:
                    self.send_header(k, v)
                self.send_header("content-length", str(len(r.body)))
                self.end_headers()
                self.wfile.write(r.body)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _any

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), One)
        threading.Thread(target=self._server.serve_forever, daemon=True,
                         name="wk-kit-fetches").start()
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
