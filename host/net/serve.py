"""`wkhost serve`: load the classes, start the host, serve HTTP, stop cleanly on a signal.

- One server per data directory: each holds DATA/_host/serve.lock (`lock_data_dir`) for
  its life, and a second one is refused at once, naming the first one's pid. The
  processes of `--processes N` share their supervisor's lock.
- A client's connection is closed when its request's head takes over the header
  timeout, or when it stays idle between requests over the keep-alive timeout
  (`ClientConnection`); the body's timeout is the front door's (host/frontdoor.py).
- A client's faults (a malformed request, a connection lost mid-request) are one line
  at info in the log, never an error with a traceback (host/logs.py, `ClientFaults`).
- Whatever can be checked without compiling is checked before the first compile (6-25 s
  each): the data and cache directories can be written (`check_writable`), each file is a
  component built for this host's world (`check_components`), and the port is free
  (`reserve_address` binds it, and the server listens on it once the classes are loaded).
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

import wkguest
from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError

from ..core.clock import FakeClock, SystemClock
from ..core.config import HostConfig
from ..core.host import Access, Host
from ..engine.component_file import World, check_component
from ..engine.components import compile_classes
from ..errors import HostError
from ..logs import ClientFaults
from ..storage import paths
from .frontdoor import make_app
from .peer_clients import PeerClients
from .peers import catch_up_clock

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
    compile_classes(host.engine, opts.actors, config.compile_cache())
    for name, wasm in opts.actors:
        log.info("loading class %s from %s", name, wasm)
        host.add_class(name, wasm, opts.access.get(name, "public"),
                       reuse_instances=name in opts.reuse_instances)
    return host


async def serve(config: HostConfig, opts: ServeOptions,
                listen: socket.socket | None = None,
                bound: list[socket.socket] | None = None) -> None:
    """Serve until SIGINT or SIGTERM. `listen`: with `--processes N`, the socket that the
    supervisor made and every process accepts on (host/supervisor.py); this process then
    also serves the others on its Unix socket (host/peers.py). Else `bound`: the sockets
    `reserve_address` bound, listened on once the classes are loaded (default: bound
    then)."""
    token, token_path = admin_token(config, opts.admin_token_file)  # before any compile
    host = build_host(config, opts)
    host.start()
    partition = config.partition
    peers = PeerClients(config.data_dir, partition) if partition.count > 1 else None
    runner = web.AppRunner(make_app(host, token, peers), access_log=None,
                           shutdown_timeout=opts.shutdown_timeout_s)
    await runner.setup()
    if listen is not None:
        bound = [listen]
    clients = await listen_for_clients(runner, config,
                                       bound or reserve_address(opts.host, opts.port))
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
        address = clients[0].sockets[0].getsockname()
        log.info("serving %s on http://%s:%s (admin token in %s)",
                 ", ".join(sorted(host.classes)), address[0], address[1], token_path)
        print(f"wkhost: listening on http://{address[0]}:{address[1]}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    log.info("stopping: no new requests; letting running events finish")
    host.holds.close()  # held requests get their held answers now, not at their deadline
    for each in clients:
        each.close()  # no new connections; the runner lets the open ones finish
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


# -- checks before anything is compiled ------------------------------------------------------
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
                        f"{_reason(e)}") from None
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


def check_writable(d: Path, flag: str) -> None:
    """Make `d` if it is missing, and write a file in it and remove it: a directory the
    server cannot write is found before any class is compiled. Raises HostError that
    names `flag` (the option, or what the directory is) and the reason."""
    if d.exists() and not d.is_dir():
        raise HostError(f"{flag} {d}: not a directory")
    try:
        d.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=d, prefix=".wk-write-check-")
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        where = "" if e.filename in (None, str(d)) else f" ({e.filename})"
        raise HostError(f"{flag} {d}: {_reason(e)}{where}") from None


def _reason(e: OSError) -> str:
    text = e.strerror or str(e)
    return text[:1].lower() + text[1:]


class UsageError(HostError):
    """A mistake in the command line's options (exit code 2)."""


def served_classes(actors: list[tuple[str, str]], access: list[tuple[str, str]],
                   reuse: list[str]) -> tuple[list[tuple[str, Path]], dict[str, Access]]:
    """The classes of `--actor NAME=FILE` and their `--access NAME=LEVEL`, checked: a
    bad or repeated name, a level other than internal or public, or an option about a
    class not served is UsageError, which names the option."""
    files: dict[str, str] = {}
    for name, file in actors:
        try:
            paths.check_class(name)
        except HostError as e:
            raise UsageError(f"--actor {name}={file}: {e}") from None
        if name in files:
            raise UsageError(f"--actor {name} is given twice ({name}={files[name]} and "
                             f"{name}={file}): each class is served from one file")
        files[name] = file
    levels: dict[str, Access] = {}
    for name, level in access:
        levels[name] = _access_level(name, level, files, levels.get(name))
    for name in reuse:
        _must_be_served("--reuse-instances", name, name, files)
    return [(n, Path(f)) for n, f in files.items()], levels


def _access_level(name: str, level: str, files: dict[str, str],
                  before: Access | None) -> Access:
    if level not in ("internal", "public"):
        raise UsageError(f"--access {name}={level}: class {name}'s access is internal or "
                         f"public, not {level!r}")
    _must_be_served("--access", name, f"{name}={level}", files)
    if before is not None and before != level:
        raise UsageError(f"--access {name} is given twice, as {before} and {level}")
    return cast(Access, level)


def _must_be_served(flag: str, name: str, given: str, files: dict[str, str]) -> None:
    if name not in files:
        served = ", ".join(files) or "none"
        raise UsageError(f"{flag} {given}: no class {name} is served (served: {served}; "
                         f"add --actor {name}=FILE.wasm)")


def preflight(config: HostConfig, opts: ServeOptions, handed_lock_fd: int | None,
              cache_flag: str, bind: bool) -> tuple[int, list[socket.socket]]:
    """Everything checked before any class is compiled, in order: the data directory
    can be written, no other server holds it (`lock_data_dir`, whose descriptor this
    returns), each file is a component for this world, the compile cache can be
    written, and (`bind`) the address is free (the sockets `reserve_address` bound)."""
    check_writable(config.data_dir, "--data")
    check_writable(config.data_dir / "_host", "--data")
    lock_fd = lock_data_dir(config.data_dir, handed_lock_fd)
    check_components(opts.actors)
    check_writable(config.compile_cache(), cache_flag)
    return lock_fd, reserve_address(opts.host, opts.port) if bind else []


def check_components(actors: list[tuple[str, Path]]) -> None:
    """Each file is a component built for this host's world, read from its bytes alone
    (host/component_file.py). Raises HostError naming the file and what it is."""
    world = World.from_wit(wkguest.WIT_DIR)
    for _, wasm in actors:
        check_component(wasm, world)


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
