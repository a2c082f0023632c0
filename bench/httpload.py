"""The throughput benchmarks' client: a lean HTTP/1.1 load generator, stdlib only.

Why not aiohttp's or httpx's client: on this 2-core machine the client shares the cores
with the server it measures. For one three-step workflow (one request, one answer of about
100 bytes), aiohttp's client took 0.35-0.6 ms of CPU and httpx's more; this one takes
about a third of aiohttp's. The CPU a client saves goes to the server, so a heavy one
measures the client as much as the server, and the more so the faster the server.

It speaks only what the benchmarks need: one request at a time per kept-alive connection,
a body of known length, and an answer framed by Content-Length or chunked. Stdlib only,
since the peers' scripts (bench/peers/) import it under their own interpreter, so that
every server is measured with the same client.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from urllib.parse import urlsplit


class HttpError(Exception):
    """The server broke the exchange: a malformed answer, or the connection lost in it."""


class _Exchange(asyncio.Protocol):
    """One connection: a request written, its answer parsed from what arrives."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buf = bytearray()
        self.waiter: asyncio.Future[tuple[int, bytes, bool]] | None = None
        self.lost = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buf += data
        if self.waiter is not None and not self.waiter.done():
            try:
                answer = self._answer()
            except HttpError as e:
                self.waiter.set_exception(e)
                return
            if answer is not None:
                self.waiter.set_result(answer)

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(HttpError(f"the connection closed mid-answer ({exc})"))

    def _answer(self) -> tuple[int, bytes, bool] | None:
        """(status, body, keep-alive) once the whole answer is in, else None."""
        end = self.buf.find(b"\r\n\r\n")
        if end < 0:
            return None
        lines = self.buf[:end].decode("latin-1").split("\r\n")
        try:
            status = int(lines[0].split(" ", 2)[1])
        except (IndexError, ValueError):
            raise HttpError(f"not an HTTP status line: {lines[0][:80]!r}") from None
        length, chunked, keep = 0, False, True
        for line in lines[1:]:
            name, _, value = line.partition(":")
            name, value = name.strip().lower(), value.strip().lower()
            if name == "content-length":
                if not value.isdigit():
                    raise HttpError(f"a malformed Content-Length: {value[:40]!r}")
                length = int(value)
            elif name == "transfer-encoding":
                chunked = "chunked" in value
            elif name == "connection":
                keep = value != "close"
        start = end + 4
        if chunked:
            body, used = _dechunk(self.buf, start)
            if body is None:
                return None
        else:
            if len(self.buf) < start + length:
                return None
            body, used = bytes(self.buf[start:start + length]), start + length
        del self.buf[:used]
        return status, body, keep


def _dechunk(buf: bytearray, pos: int) -> tuple[bytes | None, int]:
    """A chunked body starting at `pos`: (body, end) once complete, else (None, 0)."""
    parts: list[bytes] = []
    while True:
        eol = buf.find(b"\r\n", pos)
        if eol < 0:
            return None, 0
        try:
            size = int(bytes(buf[pos:eol]).split(b";", 1)[0].strip(), 16)
        except ValueError:
            raise HttpError("a malformed chunk size") from None
        data_end = eol + 2 + size
        if len(buf) < data_end + 2:
            return None, 0
        if size == 0:  # no trailers are sent to these clients: the last CRLF ends it
            return b"".join(parts), data_end + 2
        parts.append(bytes(buf[eol + 2:data_end]))
        pos = data_end + 2


class Connection:
    """A kept-alive connection to `url`'s host, opened at the first request and again
    whenever the server closes it. One request at a time."""

    def __init__(self, url: str, headers: dict[str, str] | None = None) -> None:
        parts = urlsplit(url)
        if parts.scheme != "http" or parts.hostname is None:
            raise ValueError(f"not an http:// URL: {url!r}")
        self.host, self.port = parts.hostname, parts.port or 80
        self.base = parts.path.rstrip("/")
        fixed = {"Host": f"{self.host}:{self.port}", **(headers or {})}
        self._head = "".join(f"{k}: {v}\r\n" for k, v in fixed.items())
        self._conn: _Exchange | None = None

    async def request(self, method: str, path: str, body: bytes = b"",
                      content_type: str | None = None) -> tuple[int, bytes]:
        conn = self._conn
        if conn is None or conn.lost:
            loop = asyncio.get_running_loop()
            _, conn = await loop.create_connection(_Exchange, self.host, self.port)
            self._conn = conn
        assert conn.transport is not None
        kind = f"Content-Type: {content_type}\r\n" if content_type else ""
        head = (f"{method} {self.base}{path} HTTP/1.1\r\n{self._head}{kind}"
                f"Content-Length: {len(body)}\r\n\r\n")
        conn.waiter = asyncio.get_running_loop().create_future()
        conn.transport.write(head.encode("latin-1") + body)
        try:
            status, answer, keep = await conn.waiter
        finally:
            conn.waiter = None
        if not keep:
            self.close()
        return status, answer

    def close(self) -> None:
        if self._conn is not None and self._conn.transport is not None:
            self._conn.transport.close()
        self._conn = None


@dataclass
class LoadResult:
    elapsed_s: float
    latencies_s: list[float] = field(default_factory=list)
    failures: int = 0

    def figures(self, total: int) -> dict[str, float]:
        lat = sorted(self.latencies_s)
        return {"wf_per_s": total / self.elapsed_s, "p50_ms": lat[len(lat) // 2] * 1000,
                "p99_ms": lat[int(len(lat) * 0.99)] * 1000, "failures": self.failures}


async def drive(url: str, headers: dict[str, str], concurrency: int, total: int,
                one: Callable[[Connection, int], Awaitable[bool]]) -> LoadResult:
    """Run `one(conn, i)` (a coroutine function: True when it succeeded) for i in
    0..total-1, `concurrency` at a time, each worker on its own connection."""
    counter: Iterator[int] = iter(range(total))
    result = LoadResult(0.0)

    async def worker() -> None:
        conn = Connection(url, headers)
        try:
            for i in counter:
                t0 = time.perf_counter()
                try:
                    ok = await one(conn, i)
                except (OSError, HttpError, ValueError):
                    conn.close()
                    ok = False
                if not ok:
                    result.failures += 1
                result.latencies_s.append(time.perf_counter() - t0)
        finally:
            conn.close()

    t0 = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    result.elapsed_s = time.perf_counter() - t0
    return result
