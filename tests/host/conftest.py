"""An in-process Host on a real data directory, serving real built components.

Compiled components go to one shared cache (<repo>/.cache/compiled), so only the first
host of a run compiles (seconds); the others load the artifact (milliseconds).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from wkhost.config import HostConfig
from wkhost.core.host import Host
from wkhost.testing import FakeClock

from .support import COMPILED, START_MS, MakeProbe, Probe


@pytest.fixture
def make_probe(tmp_path: Path, probe_wasm: Path) -> Iterator[MakeProbe]:
    hosts: list[Host] = []

    def make(data_dir: Path | None = None, reuse_instances: bool = False,
             **settings: Any) -> Probe:
        config = HostConfig(data_dir=data_dir or tmp_path / "data", cache_dir=COMPILED,
                            **settings)
        clock = FakeClock(START_MS)
        host = Host(config, clock)
        hosts.append(host)  # before it starts: one whose start fails is closed too
        host.add_class("probe", probe_wasm, reuse_instances=reuse_instances)
        host.add_class("inner", probe_wasm, access="internal")
        host.start()
        return Probe(host, clock)

    yield make
    with contextlib.ExitStack() as closing:  # every one, whatever the one before did
        for h in reversed(hosts):  # (an ExitStack unwinds last first) in the order made
            closing.callback(h.close, timeout_s=2)


@pytest.fixture
def probe(make_probe: MakeProbe) -> Probe:
    return make_probe()
