"""`wkhost serve`: load the classes, start the host, serve HTTP, stop cleanly on a signal.

Before this, whatever can be checked without compiling is (host/net/preflight.py), and
the data directory is locked (host/net/data_lock.py). The clients' connections are
host/net/connections.py's; the front door, host/net/frontdoor.py's.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import signal
import socket
import stat
import string
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from aiohttp import web

from ..clock import SystemClock
from ..config import HostConfig
from ..core.host import Host
from ..engine.components import compile_classes
from ..errors import HostError
from ..events.classes import Access
from ..testing import FakeClock
from .connections import client_faults_logger, listen_for_clients, reserve_address
from .console.session import PATH as CONSOLE_PATH
from .frontdoor import make_app
from .peer_clients import PeerClients
from .peers import Peers, catch_up_clock
from .remote_calls import RemoteCalls
from .tokens import Tokens, read_tokens

log = logging.getLogger("wkhost")


@dataclass
class ServeOptions:
    actors: list[tuple[str, Path]]
    access: dict[str, Access] = field(default_factory=dict)
    host: str = "127.0.0.1"
    port: int = 8080
    admin_token_file: Path | None = None
    fake_clock: bool = False
    tokens_file: Path | None = None  # named tokens with roles (net/tokens.py)
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
    token = new_token()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(token + "\n")
    return token, path


def new_token() -> str:
    """About 256 random bits, URL-safe, never beginning with '-': on a command line, a value
    that begins with '-' reads as an option (`wkhost call --token -x...` was refused,
    for 1 data directory in 64). A leading '-' is drawn again among the other 63
    characters, so every first character stays equally likely."""
    token = secrets.token_urlsafe(32)
    if token.startswith("-"):
        token = secrets.choice(_URLSAFE_NO_DASH) + token[1:]
    return token


_URLSAFE_NO_DASH = string.ascii_letters + string.digits + "_"


def build_host(config: HostConfig, opts: ServeOptions, address: str = "") -> Host:
    """The host, its classes loaded. `address`: where the other nodes reach this one,
    in cluster mode (net/cluster.py)."""
    clock = FakeClock.served_on(config.data_dir, opts.fake_clock_start_ms) \
        if opts.fake_clock else SystemClock()
    if config.cluster_url:
        from .cluster import build_node_host  # psycopg and the cluster's parts: only here

        host = build_node_host(config, opts.actors, clock, address)
    else:
        partition = config.partition
        remote = RemoteCalls(processes=Peers(config.data_dir, partition)) \
            if partition.count > 1 else None
        host = Host(config, clock, remote)
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
    supervisor made and every process accepts on (host/net/supervisor.py); this process
    then also serves the others on its Unix socket (host/net/peers.py). Else `bound`: the
    sockets `reserve_address` bound, listened on once the classes are loaded (default:
    bound then)."""
    token, token_path = admin_token(config, opts.admin_token_file)  # before any compile
    tokens = read_tokens(token, opts.tokens_file)
    socks = [listen] if listen is not None else bound or reserve_address(opts.host, opts.port)
    # A member of a node's --processes N: the other nodes reach it on a port of its own
    # (the shared one may hand a connection to any of the node's processes).
    own = reserve_address(opts.host, 0) if config.cluster_url and listen is not None else []
    host = build_host(config, opts, advertised(config, own or socks, member=bool(own)))
    host.start()
    if host.cluster is not None:
        await asyncio.to_thread(host.cluster.start, host)
    doors = await _Doors.open(host, token, tokens, opts, socks + own)
    if listen is not None:
        partition = config.partition
        print(f"wkhost: process {partition.me} of {partition.count} ready", flush=True)
    else:
        _say_listening(host, doors.clients, token_path)
    await _signalled()
    log.info("stopping: no new requests; letting running events finish")
    await doors.close()
    await asyncio.to_thread(host.close, opts.shutdown_timeout_s)
    if host.cluster is not None:
        await asyncio.to_thread(host.cluster.close)  # after the events: what they wrote goes
    log.info("stopped cleanly")


@dataclass
class _Doors:
    """What serves HTTP: the front door on the clients' sockets and, with `--processes N`,
    on this process's Unix socket for the others."""

    host: Host
    runner: web.AppRunner
    clients: list[asyncio.Server]
    peers: PeerClients | None = None
    peer_runner: web.AppRunner | None = None

    @staticmethod
    async def open(host: Host, token: str, tokens: Tokens, opts: ServeOptions,
                   socks: list[socket.socket]) -> _Doors:
        config = host.config
        partition = config.partition
        peers = PeerClients(config.data_dir, partition) if partition.count > 1 else None
        runner = web.AppRunner(make_app(host, token, peers, tokens=tokens), access_log=None,
                               shutdown_timeout=opts.shutdown_timeout_s)
        await runner.setup()
        doors = _Doors(host, runner, await listen_for_clients(runner, config, socks), peers)
        if peers is not None:
            doors.peer_runner = await _serve_peers(host, token, peers, opts)
        return doors

    async def close(self) -> None:
        """Stop taking requests, and let the running ones finish."""
        self.host.holds.close()  # held requests get their held answers now, not at their deadline
        for each in self.clients:
            each.close()  # no new connections; the runner lets the open ones finish
        await self.runner.cleanup()
        if self.peer_runner is not None:
            await self.peer_runner.cleanup()
            config = self.host.config
            config.partition.socket_of(config.data_dir, config.partition.me).unlink(
                missing_ok=True)
        if self.peers is not None:
            await self.peers.close()


async def _serve_peers(host: Host, token: str, peers: PeerClients,
                       opts: ServeOptions) -> web.AppRunner:
    """Serve the other processes on this one's Unix socket."""
    config = host.config
    path = config.partition.socket_of(config.data_dir, config.partition.me)
    prepare_socket_dir(path.parent)
    path.unlink(missing_ok=True)  # left by this process's predecessor
    runner = web.AppRunner(make_app(host, token, peers, for_peers=True),
                           access_log=None, shutdown_timeout=opts.shutdown_timeout_s,
                           logger=client_faults_logger())
    await runner.setup()
    await web.UnixSite(runner, str(path)).start()
    if opts.fake_clock:
        await catch_up_clock(runner.app)
    return runner


def advertised(config: HostConfig, socks: list[socket.socket], member: bool = False) -> str:
    """Where the other nodes of a cluster reach this one: --advertise, else the address
    of `socks`. A `member` (one of a node's --processes N) keeps --advertise's host but
    its own port."""
    if not config.cluster_url:
        return ""
    host, port = socks[0].getsockname()[:2]
    if not config.advertise:
        return f"{host}:{port}"
    if member:
        return f"{config.advertise.rpartition(':')[0]}:{port}"
    return config.advertise


def _say_listening(host: Host, clients: list[asyncio.Server], token_path: Path) -> None:
    address = clients[0].sockets[0].getsockname()
    log.info("serving %s on http://%s:%s (admin token in %s)",
             ", ".join(sorted(host.classes)), address[0], address[1], token_path)
    say_listening(address, host.config, token_path)


def say_listening(address: tuple[str, int], config: HostConfig, token_path: Path) -> None:
    """The banner on stdout, once the server takes requests: where, and where its console
    is (`listening on` is the line scripts and tests wait for: it comes first)."""
    url = f"http://{address[0]}:{address[1]}"
    print(f"wkhost: listening on {url}", flush=True)
    if config.console:
        print(f"wkhost: console at {url}{CONSOLE_PATH}/ (log in with the admin token in "
              f"{token_path})", flush=True)


async def _signalled() -> None:
    """Return once SIGINT or SIGTERM has come."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()


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
