"""How the front door reaches the other processes of `--processes N` (what it asks
them: host/net/peers.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from pathlib import Path

from ..errors import PeerLost, PeerUnavailable
from ..partition import Partition

Exchange = tuple[int, list[tuple[str, str]], bytes]  # status, headers, body
_Stream = tuple[asyncio.StreamReader, asyncio.StreamWriter]


class PeerClients:
    """Kept connections to the other processes' Unix sockets, in the front door's loop,
    and one HTTP/1.1 request and answer over them at a time.

    Why not aiohttp's client: its cost per request passed on between two processes
    shows in every forwarded request (docs/performance.md), and nothing here needs its
    generality: the other side is always this host's own front door, whose answers
    always carry a Content-Length."""

    def __init__(self, data_dir: Path, partition: Partition) -> None:
        self.data_dir = data_dir
        self.partition = partition
        self._idle: dict[int, list[_Stream]] = {}

    async def exchange(self, process: int, method: str, target: str,
                       headers: Iterable[tuple[str, str]] = (), body: bytes = b"") -> Exchange:
        """One request to `process`. Raises PeerUnavailable if it cannot be reached
        (nothing ran), PeerLost if it went with the request (it may have run)."""
        data = request_bytes(method, target, list(headers), body)
        try:
            conn = await self._connection(process)
        except OSError as e:
            raise unavailable(process, "this actor", e) from None
        try:
            status, got, out, keep = await read_answer(conn, method, data)
        except (ConnectionResetError, BrokenPipeError) as e:
            # On a Unix socket: the other end closed with our request unread (it had gone
            # already, or went before reading it), so nothing ran.
            conn[1].close()
            raise unavailable(process, "this actor", e) from None
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError,
                ValueError) as e:
            conn[1].close()
            raise lost(process, "this actor", e, "request") from None
        except BaseException:  # cancelled (the client went): the connection's state is unknown
            conn[1].close()
            raise
        self._keep(process, conn, keep)
        return status, got, out

    def _keep(self, process: int, conn: _Stream, keep: bool) -> None:
        idle = self._idle.setdefault(process, [])
        if keep and len(idle) < _MAX_IDLE:
            idle.append(conn)
        else:
            conn[1].close()

    async def _connection(self, process: int) -> _Stream:
        idle = self._idle.get(process, [])
        while idle:
            reader, writer = idle.pop()
            if not reader.at_eof() and not writer.is_closing():
                return reader, writer
            writer.close()  # closed by the other side: it stopped, or died and restarted
        path = self.partition.socket_of(self.data_dir, process)
        return await asyncio.open_unix_connection(str(path), limit=_MAX_HEAD)

    async def close(self) -> None:
        for conns in self._idle.values():
            for _, writer in conns:
                writer.close()
        self._idle.clear()


_MAX_HEAD = 1 << 20
# Kept connections per other process: enough for the requests in flight at once between
# two processes; more (after a burst of held requests) are closed when their answer comes.
_MAX_IDLE = 64


def request_bytes(method: str, target: str, headers: list[tuple[str, str]],
                   body: bytes) -> bytes:
    head = [f"{method} {target} HTTP/1.1\r\ncontent-length: {len(body)}\r\n"]
    if not any(k.lower() == "host" for k, _ in headers):
        head.append("host: peer\r\n")
    head += [f"{k}: {v}\r\n" for k, v in headers]
    return "".join(head).encode("utf-8", "surrogateescape") + b"\r\n" + body


async def read_answer(conn: _Stream, method: str, data: bytes
                  ) -> tuple[int, list[tuple[str, str]], bytes, bool]:
    """Send `data` on `conn` and read the answer: (status, headers, body, whether the
    connection stays open)."""
    reader, writer = conn
    writer.write(data)
    status, got, length, keep = _parse_head(await reader.readuntil(b"\r\n\r\n"))
    if method == "HEAD" or status in (204, 304):
        length = 0
    out = await reader.readexactly(length) if length else b""
    return status, got, out, keep


def unavailable(process: int, serves: str, e: BaseException) -> PeerUnavailable:
    return PeerUnavailable(f"process {process}, which serves {serves}, did not answer "
                           f"({type(e).__name__}); retry shortly")


def lost(process: int, serves: str, e: BaseException, what: str) -> PeerLost:
    return PeerLost(f"process {process}, which serves {serves}, went before it answered "
                    f"({type(e).__name__}): the {what} may have run")


def _parse_head(raw: bytes) -> tuple[int, list[tuple[str, str]], int, bool]:
    """(status, headers, content length, whether the connection stays open)."""
    lines = raw.decode("utf-8", "surrogateescape").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    if status < 200:  # an interim answer: nothing here asks for one
        raise ValueError(f"an interim answer ({status}) from a peer")
    headers: list[tuple[str, str]] = []
    length, keep = None, True
    for line in lines[1:]:
        if not line:
            continue
        k, _, v = line.partition(":")
        k, v = k.strip(), v.strip()
        low = k.lower()
        if low == "content-length":
            length = int(v)
        elif low == "connection":
            keep = v.lower() != "close"
        elif low == "transfer-encoding":
            raise ValueError("a chunked answer from a peer")  # never sent by the front door
        headers.append((k, v))
    if length is None:
        raise ValueError("an answer without a Content-Length from a peer")
    return status, headers, length, keep
