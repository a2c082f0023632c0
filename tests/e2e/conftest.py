"""Fixtures that start real `wkhost serve` processes on 127.0.0.1 with built components."""

from __future__ import annotations

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
        server = Server(data or tmp_path / "data", actors, extra, access).start()
        servers.append(server)
        return server

    yield make
    for s in servers:
        if s.proc is not None and s.proc.poll() is None:
            s.stop()


@pytest.fixture
def server(make_server: MakeServer) -> Server:
    return make_server()
