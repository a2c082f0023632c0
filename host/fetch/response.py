"""Reading a fetch's response off its socket, within the fetch's budget.

Response header names are lower case, folded values are unfolded, and the headers about
the connection's framing (transfer-encoding, connection, keep-alive, proxy-connection:
`wire.CONNECTION_HEADERS`) are dropped because the body handed back is already
de-chunked. Bodies are returned as received (no decompression). A body without
Content-Length or chunking ends when the server closes; only a reset can mark it broken.
"""

from __future__ import annotations

import http.client
import io
import re
import socket
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from ..wire import CONNECTION_HEADERS
from .budget import Clock
from .errors import FetchError, describe
from .policy import FetchPolicy, Target
from .redirects import REDIRECTS

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer

READ_CHUNK = 64 * 1024
_FOLD = re.compile(r"\r?\n[ \t]*")


@dataclass
class FetchResponse:
    status: int
    headers: list[tuple[str, str]]
    body: bytes


def receive(
    sock: socket.socket, target: Target, method: str, policy: FetchPolicy, clock: Clock
) -> FetchResponse:
    source = _DeadlineSource(sock, clock)
    # HTTPResponse only calls makefile("rb") on what it is given.
    resp = http.client.HTTPResponse(cast(socket.socket, source), method=method)
    try:
        _begin(resp, target, clock)
        headers = _response_headers(resp)
        if resp.status in REDIRECTS and resp.getheader("location"):
            return FetchResponse(resp.status, headers, b"")  # followed: its body is moot
        return FetchResponse(resp.status, headers, _read_body(resp, target, policy, clock))
    finally:
        resp.close()


def _begin(resp: http.client.HTTPResponse, target: Target, clock: Clock) -> None:
    try:
        resp.begin()
    except TimeoutError:
        raise clock.expired(f"waiting for the response from {target.where}") from None
    except http.client.RemoteDisconnected:
        raise FetchError(
            "connect", f"{target.where} closed the connection without a response"
        ) from None
    except (http.client.HTTPException, OSError) as exc:
        raise FetchError(
            "connect", f"bad response head from {target.where}: {describe(exc)}"
        ) from None


def _response_headers(resp: http.client.HTTPResponse) -> list[tuple[str, str]]:
    return [
        (name.lower(), _FOLD.sub(" ", value))
        for name, value in resp.getheaders()
        if name.lower() not in CONNECTION_HEADERS
    ]


def _read_body(
    resp: http.client.HTTPResponse, target: Target, policy: FetchPolicy, clock: Clock
) -> bytes:
    cap = policy.max_response_bytes
    if resp.length is not None and resp.length > cap:
        raise _too_large(cap)  # the declared length is enough; do not read it
    body = bytearray()
    while True:
        try:
            # Ask for no more than one byte past the cap, so a huge body costs cap + 1.
            piece = resp.read(min(READ_CHUNK, cap + 1 - len(body)))
        except TimeoutError:
            raise clock.expired(f"reading the body from {target.where}") from None
        except (http.client.HTTPException, OSError) as exc:
            raise FetchError(
                "incomplete",
                f"the body from {target.where} broke after {len(body)} bytes: {describe(exc)}",
            ) from None
        if not piece:
            break
        body += piece
        if len(body) > cap:
            raise _too_large(cap)
    if resp.length:  # http.client stops quietly at EOF when Content-Length is not reached
        expected = len(body) + resp.length
        raise FetchError(
            "incomplete",
            f"the body from {target.where} ended after {len(body)} of {expected} bytes",
        )
    return bytes(body)


def _too_large(cap: int) -> FetchError:
    return FetchError("too-large", f"response body over the {cap}-byte cap")


class _DeadlineSource:
    """Stands in for the socket given to HTTPResponse so every read sees the budget."""

    def __init__(self, sock: socket.socket, clock: Clock) -> None:
        self._sock = sock
        self._clock = clock

    def makefile(self, mode: str) -> io.BufferedReader:
        return io.BufferedReader(_DeadlineReader(self._sock, self._clock), READ_CHUNK)


class _DeadlineReader(io.RawIOBase):
    """Raw reads with the socket timeout reset to the time left before each one.

    A per-read timeout alone lets a server send one byte just before each timeout and go
    on forever; recomputing it from the fetch's stop time bounds the total.
    """

    def __init__(self, sock: socket.socket, clock: Clock) -> None:
        super().__init__()
        self._sock = sock
        self._clock = clock

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: WriteableBuffer) -> int:
        left = self._clock.stop - time.monotonic()
        if left <= 0:
            raise TimeoutError("the fetch's time ran out")
        self._sock.settimeout(left)
        return self._sock.recv_into(buffer)
