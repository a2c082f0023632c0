"""`wkhost serve`: load the classes, start the host, serve HTTP, stop cleanly on a signal."""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import signal
import socket
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from aiohttp import web

from .clock import FakeClock, SystemClock
from .config import HostConfig
from .errors import HostError
from .frontdoor import make_app
from .peers import PeerClients, catch_up_clock
from .runtime import Access, Host

log = logging.getLogger("wkhost")


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
    site: web.BaseSite
    if listen is not None:
        site = web.SockSite(runner, listen)
    else:
        site = web.TCPSite(runner, opts.host, opts.port)
    await site.start()
    peer_runner = None
    if peers is not None:
        path = partition.socket_of(config.data_dir, partition.me)
        prepare_socket_dir(path.parent)
        path.unlink(missing_ok=True)  # left by this process's predecessor
        peer_runner = web.AppRunner(make_app(host, token, peers, for_peers=True),
                                    access_log=None, shutdown_timeout=opts.shutdown_timeout_s)
        await peer_runner.setup()
        await web.UnixSite(peer_runner, str(path)).start()
        if opts.fake_clock:
            await catch_up_clock(peer_runner.app)
    if listen is not None:
        print(f"wkhost: process {partition.me} of {partition.count} ready", flush=True)
    else:
        bound = runner.addresses[0] if runner.addresses else (opts.host, opts.port)
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
