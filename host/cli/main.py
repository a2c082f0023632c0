"""The `wkhost` command line: its parser, made of one module per command (serve, call,
actors, build, workflow), and the one place that turns what a command ends with into
the process's exit code. The codes: the contract in host/cli/options.py (one table,
shown in each command's --help and in docs/cli.md).

Only `serve` and `build` import the server or the engine, and only when named: a command
that speaks HTTP to a running server, and any --help but theirs, starts without them
(issue 42: their imports were most of every command's start)."""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import sys
from typing import Any

from .actors import add_actors
from .audit import add_audit
from .call import add_call
from .options import CliError, Exit, token_attached
from .schedule import add_schedule
from .test_cmd import add_test
from .workflow import add_workflow_command


def main(argv: list[str] | None = None) -> int:
    try:
        try:
            return _main(argv)
        finally:  # here, not at exit, so that a reader gone (`| head`) is seen below;
            sys.stdout.flush()  # also after --help, which ends in SystemExit
    except BrokenPipeError:  # anywhere: one place for every command
        return _output_closed()


def _main(argv: list[str] | None) -> int:
    given = list(sys.argv[1:] if argv is None else argv)
    parser = make_parser(named=_named_command(given))
    args = parser.parse_args(token_attached(given))
    args.argv = given  # for serve --processes N
    if not getattr(args, "run", None):
        parser.print_help()
        return Exit.USAGE
    try:
        return int(args.run(args))
    except CliError as e:
        print(f"wkhost: error: {e}", file=sys.stderr)
        return e.code
    except KeyboardInterrupt:
        return Exit.INTERRUPTED


def _output_closed() -> int:
    """stdout or stderr was closed before all was written (`wkhost actors c | head -3`).

    Both are pointed at /dev/null, so that what is left in their buffers goes there at
    exit rather than failing again with "Exception ignored ... BrokenPipeError". The exit
    code is a shell's for a tool that SIGPIPE ended (141), so that `set -o pipefail` sees
    what it sees for any other tool. (SIGPIPE itself stays ignored, as Python sets it: the
    server's sockets must get EPIPE, not end the process.)"""
    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            os.dup2(devnull, stream.fileno())
    os.close(devnull)
    return Exit.BROKEN_PIPE


def make_parser(named: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command. Given `named`, the command a command line names (""
    for none), serve and build get their options only if named: otherwise each is the
    one line `wkhost --help` shows of it, so that their imports are not paid for."""
    p = argparse.ArgumentParser(
        prog="wkhost",
        description="A durable-execution host for WebAssembly actors.",
        epilog="Run `wkhost COMMAND --help` for a command's options, examples and exit "
               "codes; docs/cli.md has them all.",
    )
    p.add_argument("--version", action=_Version)
    sub = p.add_subparsers(title="commands", metavar="COMMAND")
    for name, add_command in (("serve", _add_serve), ("call", add_call),
                              ("actors", add_actors), ("build", _add_build),
                              ("workflow", add_workflow_command),
                              ("schedule", add_schedule), ("audit", add_audit),
                              ("test", add_test)):
        if name in _DEFERRED and named is not None and named != name:
            sub.add_parser(name, help=_DEFERRED[name])
        else:
            add_command(sub)
    return p


def _add_serve(sub: Any) -> None:
    # Deferred: serve's options are HostConfig's fields, and host/config.py imports the
    # engine (wasmtime); serve.py imports the server (aiohttp).
    from .serve import add_serve

    add_serve(sub)


def _add_build(sub: Any) -> None:
    from .build import add_build  # deferred: its options are the engine's (build.py)

    add_build(sub)


# The line of each deferred command in `wkhost --help`, as its own module writes it (a
# test holds the two the same): reading it there would import what deferring spares.
_DEFERRED = {"serve": "serve actor classes over HTTP",
             "build": "build a Python actor into a wasm component"}


def _named_command(argv: list[str]) -> str:
    """The command `argv` names, or "" for none: its first argument that is not an
    option. The parser's own options (-h, --version) take no value, so argparse runs
    that command or refuses the command line."""
    return next((a for a in argv if not a.startswith("-")), "")


class _Version(argparse.Action):
    """--version: looked up only when asked, so that other commands pay nothing for it."""

    def __init__(self, option_strings: list[str], dest: str, **_: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help="print the versions of wkhost, wasmtime, componentize-py and "
                              "Python, and exit")

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        print(version_text())
        parser.exit()


def version_text() -> str:
    import importlib.metadata  # here: 15 ms that only --version needs

    def version(dist: str) -> str:
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            return "not installed"

    return (f"wkhost {version('wkhost')} (wasmtime {version('wasmtime')}, componentize-py "
            f"{version('componentize-py')}, Python {platform.python_version()})")


if __name__ == "__main__":
    sys.exit(main())
