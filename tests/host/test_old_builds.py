"""A component built before a WIT change still links and serves (wit/README.md: the WIT
only grows). The probe guest is built here from the guest SDK and the WIT of a pinned
commit, before `lifecycle.last-trap-info` and `report-exception` existed, and served by
this host: its requests, its SQL, its trap (kept as the guest's, with no exception, as
it could report none) and its `last-trap` after it.

The build runs once and is kept in .cache/components under the commit's name."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import subprocess
import tarfile
import tempfile
from collections.abc import Iterator
from io import BytesIO
from pathlib import Path

import pytest
from wkhost.config import HostConfig
from wkhost.core.host import Host
from wkhost.engine.componentize import componentize_command
from wkhost.errors import GuestFailed
from wkhost.storage import paths
from wkhost.testing import FakeClock

from ..conftest import CACHE_DIR, REPO
from .support import COMPILED, START_MS, Probe

# The last commit before the WIT's lifecycle.last-trap-info: its SDK imports
# wk:host/lifecycle@0.1.0 without it.
OLD_COMMIT = "9401b45fe18ae8b1faece3edede7fed9fb4b9d9c"
OLD_TREES = ("guest_sdk/wkguest", "wit", "tests/guests/probe.py")


def _extract_old_tree(into: Path) -> None:
    archive = subprocess.run(["git", "-C", str(REPO), "archive", OLD_COMMIT, *OLD_TREES],
                             check=True, capture_output=True, timeout=60).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="tar")


def build_old_probe() -> Path:
    out = CACHE_DIR / f"old-probe-{OLD_COMMIT[:12]}.wasm"
    if out.is_file():
        return out
    with tempfile.TemporaryDirectory(prefix="wk-old-build-") as name:
        tmp = Path(name)
        _extract_old_tree(tmp / "tree")
        sdk = tmp / "sdk"  # as the build stages it (host/engine/componentize.py)
        shutil.copytree(tmp / "tree/guest_sdk/wkguest", sdk / "wkguest", symlinks=True,
                        ignore=shutil.ignore_patterns("wit", "__pycache__"))
        (sdk / "sitecustomize.py").write_text("import sys\n\nsys.dont_write_bytecode = True\n")
        partial = tmp / "probe.wasm"
        cmd = [*componentize_command(), "-d", str(tmp / "tree/wit"), "-w", "actor",
               "componentize", "probe", "-p", str(tmp / "tree/tests/guests"), "-p", str(sdk),
               "-o", str(partial)]
        done = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        CACHE_DIR.mkdir(parents=True, exist_ok=True)
        staged = out.with_name(f".{out.name}.{os.getpid()}.tmp")
        shutil.copyfile(partial, staged)
        os.replace(staged, out)  # whole or not at all, for another worker
    return out


@pytest.fixture(scope="module")
def old_probe_wasm() -> Path:
    return build_old_probe()


@pytest.fixture
def old_host(tmp_path: Path, old_probe_wasm: Path) -> Iterator[Probe]:
    clock = FakeClock(START_MS)
    host = Host(HostConfig(data_dir=tmp_path / "data", cache_dir=COMPILED), clock)
    try:
        host.add_class("probe", old_probe_wasm)
        host.start()
        yield Probe(host, clock)
    finally:
        host.close(timeout_s=2)


def test_the_old_build_imports_lifecycle_without_the_new_functions(
        old_probe_wasm: Path) -> None:
    """What makes the next test mean something: the old build's WIT has no new function
    (the component names each function it imports)."""
    data = old_probe_wasm.read_bytes()
    assert b"wk:host/lifecycle@0.1.0" in data and b"last-trap" in data
    assert b"last-trap-info" not in data and b"report-exception" not in data


def test_an_old_build_links_serves_and_traps_as_before(old_host: Probe) -> None:
    assert old_host.sql("a", "CREATE TABLE t (x)") is not None
    old_host.sql("a", "INSERT INTO t VALUES (?)", [7])
    assert old_host.sql("a", "SELECT x FROM t")["rows"] == [[7]]
    with pytest.raises(GuestFailed, match="^guest trapped: "):
        old_host.send("a", "POST", "/trap")
    assert old_host.sql("a", "SELECT x FROM t")["rows"] == [[7]]  # a new instance serves
    kept = dict(_meta(old_host, "a"))
    assert kept["trap"].startswith("guest trapped: "), kept
    assert json.loads(kept["trap_detail"]) == {"kind": "guest", "exception": None}


def _meta(p: Probe, actor_id: str) -> list[tuple[str, str]]:
    """The actor's host rows, read beside the host (WAL: a reader waits for no one)."""
    path = paths.db_path(p.host.config.data_dir, "probe", actor_id)
    with contextlib.closing(sqlite3.connect(path)) as db:
        return list(db.execute("SELECT k, v FROM _wk_host_meta"))
