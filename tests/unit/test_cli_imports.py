"""A `wkhost` command that only speaks HTTP to a running server, and the --help of any
command but serve and build, starts without the server and the engine (issue 42): run
in a real process, each leaves aiohttp, wasmtime and the server's modules unimported.
host/cli/main.py defers serve's and build's parsers for it."""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from wkhost.cli.main import make_parser

REPO = Path(__file__).resolve().parents[2]

# What only serving (or building) needs: the server, the engine, and their libraries.
SERVER_ONLY = ("aiohttp", "wasmtime", "wkhost.net", "wkhost.engine", "wkhost.core",
               "wkhost.config", "wkhost.cli.serve", "wkhost.cli.build")

# Runs `python -m wkhost.cli ARGS...` in this process, then writes the modules it
# imported to the file named first, whatever the command ended with.
RUN_AND_LIST = """\
import json, runpy, sys
out, sys.argv = sys.argv[1], ["wkhost", *sys.argv[2:]]
try:
    runpy.run_module("wkhost.cli", run_name="__main__")
finally:
    with open(out, "w") as f:
        json.dump(sorted(sys.modules), f)
"""


def run(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """`wkhost ARGS` in a process of its own: what it did, and the modules it imported."""
    modules = tmp_path / "modules.json"
    done = subprocess.run([sys.executable, "-c", RUN_AND_LIST, str(modules), *args],
                          capture_output=True, text=True, timeout=60, cwd=REPO)
    return done, json.loads(modules.read_text())


def server_only(modules: list[str]) -> list[str]:
    return [m for m in modules if any(m == p or m.startswith(p + ".") for p in SERVER_ONLY)]


@pytest.fixture(scope="module")
def nothing_listening() -> Iterator[str]:
    """A URL on 127.0.0.1 whose port is bound but not listening: connections are refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{s.getsockname()[1]}"


@pytest.mark.parametrize("args", [
    ["--help"], [], ["workflow", "--help"], ["workflow", "list", "--help"],
    ["workflow", "status", "--help"], ["workflow", "bulk", "--help"], ["actors", "--help"],
    ["call", "--help"], ["audit", "--help"], ["schedule", "list", "--help"], ["--version"],
], ids=" ".join)
def test_help_imports_neither_server_nor_engine(tmp_path: Path, args: list[str]) -> None:
    done, modules = run(tmp_path, *args)
    assert done.returncode == (2 if not args else 0), done.stderr
    assert done.stdout.startswith(("usage: wkhost", "wkhost 0")), done.stdout
    assert server_only(modules) == []


@pytest.mark.parametrize("args", [
    ["workflow", "list", "orders"], ["workflow", "status", "orders", "o1"],
    ["workflow", "start", "orders", "o1", "--input", "{}"], ["actors", "orders"],
    ["audit"], ["call", "orders/o1", "/"], ["schedule", "list"],
], ids=" ".join)
def test_a_command_over_http_imports_neither_server_nor_engine(
        tmp_path: Path, nothing_listening: str, args: list[str]) -> None:
    done, modules = run(tmp_path, *args, "--server", nothing_listening, "--token", "t")
    assert done.returncode == 3, done.stderr  # the contract's "could not be reached"
    assert nothing_listening in done.stderr, done.stderr
    assert server_only(modules) == []


def test_serve_and_build_import_theirs_when_named(tmp_path: Path) -> None:
    """The check above sees a server module imported: serve's --help imports them all."""
    done, modules = run(tmp_path, "serve", "--help")
    assert done.returncode == 0 and "--actor NAME=FILE.wasm" in done.stdout
    assert {"aiohttp", "wasmtime", "wkhost.cli.serve"} <= set(server_only(modules))
    done, modules = run(tmp_path, "build", "--help")
    assert done.returncode == 0 and "OUT.wasm" in done.stdout
    assert "wkhost.engine.build" in server_only(modules)


@pytest.mark.parametrize("named", ["", "workflow", "serve", "build"])
def test_the_deferred_commands_read_as_when_defined(named: str) -> None:
    """`wkhost --help` shows serve and build as their own modules write them, whichever
    command a command line names; the one named has all its options."""
    whole = make_parser()
    parser = make_parser(named=named)
    assert parser.format_help() == whole.format_help()
    if named:
        assert _command(parser, named).format_help() == _command(whole, named).format_help()


def _command(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    command: argparse.ArgumentParser = sub.choices[name]
    return command
