"""`wkhost serve` checks what it can without compiling before its first compile (6-25 s
each), and says what is wrong naming the option or the file; the compile cache is shared
by every data directory, and a compile says so as it goes.

Each refusal is a real `wkhost serve` run to its end, with a good class named first and
its own empty compile cache: that the cache is still empty afterwards shows that nothing
was compiled before the refusal.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import wasmtime

from .server import REPO, Server

pytestmark = pytest.mark.e2e


def serve(tmp_path: Path, *args: str, data: Path | None = None,
          cache: Path | None = None) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "wkhost.cli", "serve", "--port", "0",
           "--data", str(data or tmp_path / "data"),
           "--cache-dir", str(cache or tmp_path / "cache"), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=REPO)


def refused(done: subprocess.CompletedProcess[str], code: int, *says: str) -> None:
    assert done.returncode == code, (done.returncode, done.stderr[-2000:])
    for text in says:
        assert text in done.stderr, done.stderr[-2000:]
    assert "Traceback" not in done.stderr and "listening on" not in done.stdout


def compiled_nothing(cache: Path) -> None:
    assert not cache.exists() or not any(cache.iterdir()), sorted(cache.rglob("*"))


# -- files that are no component for this host ------------------------------------------------
def _bad_files(tmp_path: Path, probe: Path) -> dict[str, tuple[Path, str]]:
    files = {
        "app.py": (b"from wkguest import Actor\n", "{p} is not a component, it is a Python "
                   "file: build it with `wkhost build {p} -o {stem}.wasm`"),
        "core.wasm": (bytes(wasmtime.wat2wasm("(module)")),
                      "{p} is not a component, it is a core WebAssembly module"),
        "cut.wasm": (probe.read_bytes()[:1_000_000], "{p} is truncated"),
        "http.wasm": (bytes(wasmtime.wat2wasm(
            '(component (import "wasi:http/types@0.2.0" (instance)))')),
            "{p} was not built for this host's world (it imports wasi:http/types@0.2.0"),
        "text.wasm": (b"<html>\n", "{p} is not a component, nor any WebAssembly"),
    }
    out = {}
    for name, (data, says) in files.items():
        path = tmp_path / name
        path.write_bytes(data)
        out[name] = (path, says.format(p=path, stem=path.with_suffix("")))
    return out


def test_a_file_that_is_no_component_for_this_host_is_named_before_any_compile(
        tmp_path: Path, probe_wasm: Path) -> None:
    for path, says in _bad_files(tmp_path, probe_wasm).values():
        done = serve(tmp_path, "--actor", f"good={probe_wasm}", "--actor", f"bad={path}")
        refused(done, 1, says)
        compiled_nothing(tmp_path / "cache")


# -- the data and cache directories, the port ------------------------------------------------
def test_an_unwritable_data_directory_names_the_flag_before_any_compile(
        tmp_path: Path, probe_wasm: Path) -> None:
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    cache = tmp_path / "cache"
    refused(serve(tmp_path, "--actor", f"p={probe_wasm}", data=a_file / "data"), 1,
            f"--data {a_file / 'data'}: not a directory")
    refused(serve(tmp_path, "--actor", f"p={probe_wasm}", data=a_file), 1,
            f"--data {a_file}: not a directory")
    refused(serve(tmp_path, "--actor", f"p={probe_wasm}", cache=a_file / "c"), 1,
            f"--cache-dir {a_file / 'c'}: not a directory")
    compiled_nothing(cache)


@pytest.fixture
def port_in_use() -> Iterator[int]:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        yield taken.getsockname()[1]


def test_a_port_in_use_is_found_before_any_compile(
        tmp_path: Path, probe_wasm: Path, port_in_use: int) -> None:
    for processes in ("1", "2"):
        done = serve(tmp_path, "--actor", f"p={probe_wasm}", "--port", str(port_in_use),
                     "--processes", processes)
        refused(done, 1, f"--port {port_in_use}: cannot listen on 127.0.0.1:{port_in_use}: "
                         "address already in use")
        compiled_nothing(tmp_path / "cache")


# -- usage ------------------------------------------------------------------------------------
@pytest.mark.parametrize("args, says", [
    (["--actor", "h=a.wasm", "--actor", "h=b.wasm"],
     "--actor h is given twice (h=a.wasm and h=b.wasm)"),
    (["--actor", "h=a.wasm", "--access", "h=private"],
     "--access h=private: class h's access is internal or public, not 'private'"),
    (["--actor", "h=a.wasm", "--access", "g=internal"],
     "--access g=internal: no class g is served (served: h; add --actor g=FILE.wasm)"),
    (["--actor", "h=a.wasm", "--access", "h=internal", "--access", "h=public"],
     "--access h is given twice, as internal and public"),
    (["--actor", "h=a.wasm", "--actor", "Bad=b.wasm"], "--actor Bad=b.wasm: bad class name"),
])
def test_mistakes_in_the_classes_are_usage_errors(
        tmp_path: Path, args: list[str], says: str) -> None:
    refused(serve(tmp_path, *args), 2, f"wkhost: error: {says}")
    assert not (tmp_path / "data").exists()  # refused before anything was written


# -- the shared compile cache, and progress -----------------------------------------------------
class DefaultCacheServer(Server):
    """A server run as a user would: no --cache-dir, so the default shared cache."""

    def command(self) -> list[str]:
        cmd = super().command()
        at = cmd.index("--cache-dir")
        return cmd[:at] + cmd[at + 2:]


def test_a_new_data_directory_reuses_what_another_compiled_and_compiling_says_so(
        tmp_path: Path, probe_wasm: Path) -> None:
    # The user's default: no WKHOST_COMPILED_DIR (the suite sets it for its own servers).
    env = {**{k: v for k, v in os.environ.items() if k != "WKHOST_COMPILED_DIR"},
           "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    first = DefaultCacheServer(tmp_path / "one", {"probe": probe_wasm}, env=env).start(300)
    try:
        assert first.request("GET", "/probe/a/now")[0] == 200
    finally:
        assert first.stop() == 0
    assert any("compiling class probe (" in line and "MB)..." in line for line in first.log)
    assert any("compiled class probe in " in line for line in first.log)
    assert list((tmp_path / "xdg" / "wkhost" / "compiled").glob("*.cwasm"))
    second = DefaultCacheServer(tmp_path / "two", {"probe": probe_wasm}, env=env).start()
    try:
        assert second.request("GET", "/probe/a/now")[0] == 200
    finally:
        assert second.stop() == 0
    assert not [line for line in second.log if "compil" in line], second.log
