"""Fixtures that start real `wkhost serve` processes on 127.0.0.1 with built components."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from .server import Server

MakeServer = Callable[..., Server]


@pytest.fixture
def make_server(tmp_path: Path, probe_wasm: Path) -> Iterator[MakeServer]:
    servers: list[Server] = []

    def make(actors: dict[str, Path] | None = None, extra: list[str] | None = None,
             access: dict[str, str] | None = None, data: Path | None = None,
             **_: Any) -> Server:
        actors = actors or {"probe": probe_wasm, "inner": probe_wasm}
        if access is None:
            access = {"inner": "internal"} if "inner" in actors else {}
        server = Server(data or tmp_path / "data", actors, extra, access)
        servers.append(server)  # before it starts: one that never says it listens still runs
        return server.start()

    yield make
    with contextlib.ExitStack() as stopping:  # every one, whatever the one before did
        for s in servers:
            stopping.callback(_stop, s)


def _stop(s: Server) -> None:
    """Stop `s` (SIGTERM), its pipes closed; one that does not exit is killed, then the
    test fails (as it did before: a server must stop on SIGTERM)."""
    if s.proc is None:
        return
    try:
        s.stop()
    except subprocess.TimeoutExpired:
        s.kill9()
        raise


@pytest.fixture
def server(make_server: MakeServer) -> Server:
    return make_server()
