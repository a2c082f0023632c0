"""The clients' connections to the front door: each request's head within the header
timeout, and a client's faults logged as one line.

- A client's connection is closed when its request's head takes over the header
  timeout, or when it stays idle between requests over the keep-alive timeout
  (`ClientConnection`); the body's timeout is the front door's (host/net/frontdoor.py).
- A client's faults (a malformed request, a connection lost mid-request) are one line
  at info in the log, never an error with a traceback (host/logs.py, `ClientFaults`).
"""

from __future__ import annotations

import asyncio
import logging
import socket
from typing import Any, cast

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError

from ..config import HostConfig
from ..errors import HostError
from ..logs import ClientFaults

http_log = logging.getLogger("wkhost.http")

# Pending connections the kernel keeps while every event thread is busy.
_BACKLOG = 1024
# What a client alone can cause, in aiohttp's server: never the host's failure.
CLIENT_FAULTS = (HttpProcessingError, ConnectionError, web.RequestPayloadError,
                 asyncio.IncompleteReadError)


class ClientConnection(web.RequestHandler):
    """aiohttp's handler of one client's connection, with a deadline on each request's
    head, which aiohttp has not: the connection's first head must be whole within the
    header timeout of the connection's start, and a later one within it of its first
    byte. Between requests, aiohttp's keep-alive timeout applies. Closing a connection
    costs its client nothing it was sent: there is no request of its in hand.

    Reads two of aiohttp's own attributes: `_request_count`, the heads parsed so far,
    and `_waiter`, set while it waits for a head with no request in hand. Their meaning
    is pinned by tests/e2e/test_front_door_hardening.py."""

    def __init__(self, manager: web.Server, header_timeout_s: float, **kwargs: Any) -> None:
        super().__init__(manager, **kwargs)
        self._header_timeout_s = header_timeout_s
        self._head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self._time_head()

    def data_received(self, data: bytes) -> None:
        heads = self._request_count
        super().data_received(data)
        if self._request_count != heads:  # a head came whole: the request is in hand
            self._stop_timing()
        elif self._head_timer is None and self._waiting():  # a head's first bytes
            self._time_head()

    def connection_lost(self, exc: BaseException | None) -> None:
        self._stop_timing()
        super().connection_lost(exc)

    def _waiting(self) -> bool:
        return self._waiter is not None and not self._waiter.done()

    def _time_head(self) -> None:
        loop = asyncio.get_running_loop()
        self._head_timer = loop.call_later(self._header_timeout_s, self._head_late)

    def _stop_timing(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_late(self) -> None:
        self._head_timer = None
        peer = self.peername
        who = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        http_log.info("%s: no whole request head within %g s: connection closed", who,
                      self._header_timeout_s)
        self.force_close()


def client_faults_logger() -> logging.Logger:
    """aiohttp's server logger, with a client's faults as one line at info."""
    return cast(logging.Logger, ClientFaults(http_log, CLIENT_FAULTS))


async def listen_for_clients(runner: web.AppRunner, config: HostConfig,
                             socks: list[socket.socket]) -> list[asyncio.Server]:
    """Accept clients on `socks`, each connection handled by a ClientConnection of the
    runner's app."""
    loop = asyncio.get_running_loop()
    manager = runner.server
    assert manager is not None
    logger = client_faults_logger()

    def connection() -> ClientConnection:
        return ClientConnection(manager, config.header_timeout_s, loop=loop,
                                keepalive_timeout=config.keepalive_timeout_s,
                                access_log=None, logger=logger)

    return [await loop.create_server(connection, sock=sock, backlog=_BACKLOG)
            for sock in socks]


# -- the addresses clients come to ----------------------------------------------------------
def reserve_address(host: str, port: int) -> list[socket.socket]:
    """A socket bound, not yet listening, on each address `host` resolves to (as asyncio's
    `create_server` would bind them): a port in use is found before any class is
    compiled, and a client that comes meanwhile is refused rather than kept waiting.
    Raises HostError naming --host or --port."""
    try:
        infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM,
                                   flags=socket.AI_PASSIVE)
    except socket.gaierror as e:
        raise HostError(f"--host {host}: {e.strerror}") from None
    socks: list[socket.socket] = []
    try:
        for family, kind, proto, _, address in dict.fromkeys(infos):
            socks.append(_bound(family, kind, proto, address))
    except OSError as e:
        for each in socks:
            each.close()
        raise HostError(f"--port {port}: cannot listen on {host}:{port}: "
                        f"{os_reason(e)}") from None
    return socks


def _bound(family: int, kind: int, proto: int, address: Any) -> socket.socket:
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:  # as asyncio: each family on its own socket
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind(address)
    except OSError:
        sock.close()
        raise
    return sock


def os_reason(e: OSError) -> str:
    text = e.strerror or str(e)
    return text[:1].lower() + text[1:]
