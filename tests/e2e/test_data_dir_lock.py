"""One `wkhost serve` per data directory: DATA/_host/serve.lock, held for the server's
life, by the supervisor of `--processes N` and its processes alike. A second server, or
a process started by hand, is refused at once (exit code 1), naming the holder's pid."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import MakeServer
from .server import COMPILED, REPO, Server

pytestmark = pytest.mark.e2e


def serve(data: Path, *args: str, pass_fds: tuple[int, ...] = ()
          ) -> subprocess.CompletedProcess[str]:
    """A second `wkhost serve` on `data`, run to its end (it is expected to refuse)."""
    cmd = [sys.executable, "-m", "wkhost.cli", "serve", "--data", str(data), "--port", "0",
           "--cache-dir", str(COMPILED), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=REPO,
                          pass_fds=pass_fds)


def refused(done: subprocess.CompletedProcess[str], holder: int) -> None:
    assert done.returncode == 1, (done.returncode, done.stderr[-2000:])
    assert f"in use by another wkhost serve (pid {holder})" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and "listening on" not in done.stdout


def pid(server: Server) -> int:
    assert server.proc is not None
    return server.proc.pid


def test_a_second_server_is_refused_before_it_loads_anything(
        make_server: MakeServer, probe_wasm: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    first = make_server(data=data)
    # A missing component would be the first thing it complains of, were the lock not
    # checked before anything is loaded.
    refused(serve(data, "--actor", "x=missing.wasm"), pid(first))
    refused(serve(data, "--actor", f"probe={probe_wasm}"), pid(first))
    refused(serve(data, "--actor", f"probe={probe_wasm}", "--processes", "2"), pid(first))
    assert first.request("GET", "/probe/a/now")[0] == 200  # the first serves on
    first.kill9()  # the kernel lets go of the lock with the process: no stale lock
    second = make_server(data=data)
    assert second.request("GET", "/probe/a/now")[0] == 200
    assert second.stop() == 0
    third = make_server(data=data)  # and after a clean stop
    assert third.request("GET", "/probe/a/now")[0] == 200


def test_the_supervisor_and_its_processes_hold_the_lock_and_no_one_else_gets_in(
        make_server: MakeServer, probe_wasm: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    supervisor = make_server(data=data, extra=["--processes", "2"])
    for actor in ("a", "b", "c", "d"):  # both processes serve, the lock shared with them
        assert supervisor.request("GET", f"/probe/{actor}/now")[0] == 200
    holder = pid(supervisor)
    refused(serve(data, "--actor", f"probe={probe_wasm}"), holder)
    refused(serve(data, "--actor", f"probe={probe_wasm}", "--processes", "2"), holder)
    # A process of --processes N started by hand, as the supervisor would start it, but
    # without the lock the supervisor hands over: refused.
    listen = socket.create_server(("127.0.0.1", 0))
    stray = ["--actor", f"probe={probe_wasm}", "--process", "0/2", "--listen-fd",
             str(listen.fileno()), "--supervisor-pid", str(os.getpid())]
    try:
        refused(serve(data, *stray, pass_fds=(listen.fileno(),)), holder)
        # Nor does a descriptor of its own on the lock file let it in...
        fd = os.open(data / "_host" / "serve.lock", os.O_RDONLY)
        try:
            refused(serve(data, *stray, "--lock-fd", str(fd),
                          pass_fds=(listen.fileno(), fd)), holder)
        finally:
            os.close(fd)
        # ...and one on another file is no lock at all.
        other = tmp_path / "other"
        other.write_text("")
        fd = os.open(other, os.O_RDONLY)
        try:
            done = serve(data, *stray, "--lock-fd", str(fd), pass_fds=(listen.fileno(), fd))
        finally:
            os.close(fd)
        assert done.returncode == 1 and "is not the lock of" in done.stderr, done.stderr
    finally:
        listen.close()
    assert supervisor.request("GET", "/probe/a/now")[0] == 200
    assert supervisor.stop() == 0
    again = make_server(data=data)  # the supervisor and its processes let it go
    assert again.request("GET", "/probe/a/now")[0] == 200
