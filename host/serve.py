"""`wkhost serve`: load the classes, start the host, serve HTTP, stop cleanly on a signal.

- One server per data directory: each holds DATA/_host/serve.lock (`lock_data_dir`) for
  its life, and a second one is refused at once, naming the first one's pid. The
  processes of `--processes N` share their supervisor's lock.
- A client's connection is closed when its request's head takes over the header
  timeout, or when it stays idle between requests over the keep-alive timeout
  (`ClientConnection`); the body's timeout is the front door's (host/frontdoor.py).
- A client's faults (a malformed request, a connection lost mid-request) are one line
  at info in the log, never an error with a traceback (host/logs.py, `ClientFaults`).
"""

from __future__ import annotations

import asyncio
import fcntl
import logging
import os
import secrets
import signal
import socket
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError

from .clock import FakeClock, SystemClock
from .config import HostConfig
from .errors import HostError
from .frontdoor import make_app
from .logs import ClientFaults
from .peers import PeerClients, catch_up_clock
from .runtime import Access, Host

log = logging.getLogger("wkhost")
http_log = logging.getLogger("wkhost.http")

LOCK_FILE = "serve.lock"
# Pending connections the kernel keeps while every event thread is busy.
_BACKLOG = 1024
# What a client alone can cause, in aiohttp's server: never the host's failure.
CLIENT_FAULTS = (HttpProcessingError, ConnectionError, web.RequestPayloadError,
                 asyncio.IncompleteReadError)


@dataclass
class ServeOptions:
    actors: list[tuple[str, Path]]
    access: dict[str, Access] = field(default_factory=dict)
    host: str = "127.0.0.1"
    port: int = 8080
    admin_token_file: Path | None = None
    fake_clock: bool = False
    shutdown_timeout_s: float = 10.0
    reuse_instances: frozenset[str] = frozenset()
    # With --processes N, every process's test clock starts at the supervisor's time.
    fake_clock_start_ms: int | None = None


def admin_token(config: HostConfig, path: Path | None) -> tuple[str, Path]:
    """Read the operator token, or make one (0600) at the default place."""
    path = path or config.data_dir / "_host" / "admin-token"
    if path.exists():
        token = path.read_text().strip()
        if len(token) >= 16:
            return token, path
    path.parent.mkdir(parents=True, exist_ok=True)
    token = secrets.token_urlsafe(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(token + "\n")
    return token, path


def build_host(config: HostConfig, opts: ServeOptions) -> Host:
    clock = FakeClock(opts.fake_clock_start_ms) if opts.fake_clock else SystemClock()
    host = Host(config, clock)
    for name, wasm in opts.actors:
        log.info("loading class %s from %s", name, wasm)
        host.add_class(name, wasm, opts.access.get(name, "public"),
                       reuse_instances=name in opts.reuse_instances)
    return host


async def serve(config: HostConfig, opts: ServeOptions,
                listen: socket.socket | None = None) -> None:
    """Serve until SIGINT or SIGTERM. `listen`: with `--processes N`, the socket that the
    supervisor made and every process accepts on (host/supervisor.py); this process then
    also serves the others on its Unix socket (host/peers.py)."""
    host = build_host(config, opts)
    token, token_path = admin_token(config, opts.admin_token_file)
    host.start()
    partition = config.partition
    peers = PeerClients(config.data_dir, partition) if partition.count > 1 else None
    runner = web.AppRunner(make_app(host, token, peers), access_log=None,
                           shutdown_timeout=opts.shutdown_timeout_s)
    await runner.setup()
    clients = await listen_for_clients(runner, config, opts, listen)
    peer_runner = None
    if peers is not None:
        path = partition.socket_of(config.data_dir, partition.me)
        prepare_socket_dir(path.parent)
        path.unlink(missing_ok=True)  # left by this process's predecessor
        peer_runner = web.AppRunner(make_app(host, token, peers, for_peers=True),
                                    access_log=None, shutdown_timeout=opts.shutdown_timeout_s,
                                    logger=client_faults_logger())
        await peer_runner.setup()
        await web.UnixSite(peer_runner, str(path)).start()
        if opts.fake_clock:
            await catch_up_clock(peer_runner.app)
    if listen is not None:
        print(f"wkhost: process {partition.me} of {partition.count} ready", flush=True)
    else:
        bound = clients.sockets[0].getsockname() if clients.sockets else (opts.host,
                                                                           opts.port)
        log.info("serving %s on http://%s:%s (admin token in %s)",
                 ", ".join(sorted(host.classes)), bound[0], bound[1], token_path)
        print(f"wkhost: listening on http://{bound[0]}:{bound[1]}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    log.info("stopping: no new requests; letting running events finish")
    host.holds.close()  # held requests get their held answers now, not at their deadline
    clients.close()  # no new connections; the runner lets the open ones finish
    await runner.cleanup()
    if peer_runner is not None:
        await peer_runner.cleanup()
        partition.socket_of(config.data_dir, partition.me).unlink(missing_ok=True)
    if peers is not None:
        await peers.close()
    await asyncio.to_thread(host.close, opts.shutdown_timeout_s)
    log.info("stopped cleanly")


def prepare_socket_dir(d: Path) -> None:
    """The peer socket's directory, this user's alone. Under /tmp (a data directory whose
    path is too long for a socket), its parent too: another user who made
    /tmp/wkhost-UID first could otherwise swap in sockets of their own, and be handed
    forwarded requests, the admin token with them."""
    d.mkdir(mode=0o700, parents=True, exist_ok=True)
    under_tmp = d.parent.parent == Path(tempfile.gettempdir())
    for each in ([d.parent] if under_tmp else []) + [d]:
        st = os.lstat(each)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
            raise HostError(f"{each} must be a directory of this user's (not a link) to "
                            "hold the processes' sockets")
        os.chmod(each, 0o700)


# -- the clients' connections ---------------------------------------------------------------
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


async def listen_for_clients(runner: web.AppRunner, config: HostConfig, opts: ServeOptions,
                             sock: socket.socket | None) -> asyncio.Server:
    """Accept clients on `sock` (or on opts.host:port), each connection handled by a
    ClientConnection of the runner's app."""
    loop = asyncio.get_running_loop()
    manager = runner.server
    assert manager is not None
    logger = client_faults_logger()

    def connection() -> ClientConnection:
        return ClientConnection(manager, config.header_timeout_s, loop=loop,
                                keepalive_timeout=config.keepalive_timeout_s,
                                access_log=None, logger=logger)

    if sock is not None:
        return await loop.create_server(connection, sock=sock, backlog=_BACKLOG)
    return await loop.create_server(connection, opts.host, opts.port, backlog=_BACKLOG)


# -- one server per data directory -----------------------------------------------------------
def lock_data_dir(data_dir: Path, handed_fd: int | None = None) -> int:
    """Hold DATA/_host/serve.lock, for this process's life (the descriptor is never
    closed): two servers on one data directory would each write its actors' files as if
    alone. Raises HostError, naming the holder's pid, if another process holds it.

    `handed_fd`: the lock's descriptor as the supervisor of `--processes N` handed it to
    a process it started. An flock belongs to the open file, which the process shares
    with the supervisor, so the lock is the supervisor's, and this process's too. A
    process started by hand has no such descriptor, and is refused like any server."""
    path = data_dir / "_host" / LOCK_FILE
    if handed_fd is not None:
        return _check_handed(handed_fd, path, data_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    if not _flock(fd):
        holder = _holder(fd)
        os.close(fd)
        raise _in_use(data_dir, holder)
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


def _check_handed(fd: int, path: Path, data_dir: Path) -> int:
    try:
        same = os.path.samestat(os.fstat(fd), os.stat(path))
    except OSError:
        same = False
    if not same:
        raise HostError(f"descriptor {fd} is not the lock of {data_dir} ({path})")
    if not _flock(fd):
        raise _in_use(data_dir, _holder(fd))
    return fd


def _flock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _holder(fd: int) -> str:
    """The pid the lock's holder wrote in it ("unknown" if it has not yet)."""
    text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    return text if text.isdigit() else "unknown"


def _in_use(data_dir: Path, holder: str) -> HostError:
    return HostError(f"{data_dir} is in use by another wkhost serve (pid {holder}): one "
                     "server per data directory; stop that one first, or give another "
                     "--data")
