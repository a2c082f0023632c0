"""The `wkhost` command line. Exit codes: the contract in host/cli_options.py (one table,
shown in each command's --help and in docs/cli.md)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import http.client
import importlib.metadata
import io
import json
import logging
import os
import platform
import re
import shlex
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, NamedTuple, NoReturn

import cbor2

from .. import logs
from ..core.config import HostConfig
from ..engine.build import add_build_command, run_build
from ..engine.components import default_cache_dir
from ..fetch import FetchPolicy
from ..net.serve import ServeOptions, UsageError, preflight, serve, served_classes
from ..net.supervisor import MAX_PROCESSES, die_with, inherited_socket, pin_to_cores, supervise
from ..partition import Partition
from .options import (
    CliError,
    Exit,
    add_server_args,
    checked_target,
    exit_status_epilog,
    operator_token,
    read_input_file,
)
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
    parser = make_parser()
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # for serve --processes N
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


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="wkhost",
        description="A durable-execution host for WebAssembly actors.",
        epilog="Run `wkhost COMMAND --help` for a command's options, examples and exit "
               "codes; docs/cli.md has them all.",
    )
    p.add_argument("--version", action=_Version)
    sub = p.add_subparsers(title="commands", metavar="COMMAND")
    _add_serve(sub)
    _add_call(sub)
    _add_actors(sub)
    _add_build(sub)
    add_workflow_command(sub)
    _with_exit_codes(sub.choices["serve"], "serve")
    return p


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
    def version(dist: str) -> str:
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            return "not installed"

    return (f"wkhost {version('wkhost')} (wasmtime {version('wasmtime')}, componentize-py "
            f"{version('componentize-py')}, Python {platform.python_version()})")


def _with_exit_codes(p: argparse.ArgumentParser, command: str) -> None:
    """Append the contract's rows for `command` to a parser made elsewhere."""
    p.formatter_class = argparse.RawDescriptionHelpFormatter  # keep the table's lines
    p.epilog = f"{p.epilog}\n\n{exit_status_epilog(command)}" if p.epilog \
        else exit_status_epilog(command)


def _add_build(sub: Any) -> None:
    b = add_build_command(sub)
    # build.py's epilog ends with a one-line exit status: the contract's rows replace it.
    b.epilog = (b.epilog or "").split("\n\nexit status:")[0] or None
    _with_exit_codes(b, "build")
    b.set_defaults(run=_run_build)


def _run_build(args: argparse.Namespace) -> int:
    """`wkhost build`, with an APP that cannot be read refused as bad usage (2), as any
    command's unreadable input file is: build.py alone would call it a failed build."""
    if Path(args.app).suffix == ".py":
        try:
            Path(args.app).open("rb").close()
        except OSError as e:
            raise CliError(f"cannot read {args.app}: {e.strerror}") from None
    return run_build(args)


# -- serve --------------------------------------------------------------------------------
def _add_serve(sub: Any) -> None:
    s = sub.add_parser(
        "serve", help="serve actor classes over HTTP",
        description="Serve actor classes: /{class}/{id}/{path} goes to that actor's handle.",
        epilog="example: wkhost serve --actor orders=orders.wasm --actor app=app.wasm "
               "--access orders=internal",
    )
    s.add_argument("--actor", action="append", default=[], metavar="NAME=FILE.wasm",
                   required=True, help="serve FILE.wasm as class NAME (repeatable)")
    s.add_argument("--access", action="append", default=[], metavar="NAME=internal|public",
                   help="internal: only actors and operators may call NAME (default public)")
    s.add_argument("--reuse-instances", action="append", default=[], metavar="NAME",
                   help="let an instance of class NAME that its actor let go serve NAME's "
                        "next new actor (repeatable). Each new actor then skips about 1.7 ms "
                        "of instantiation and clean-up, and runs warm code: about a third "
                        "of a short workflow's CPU. The price: the guest's module globals "
                        "outlive an actor (its Actor object does not), so keep per-actor "
                        "state on the object or in SQLite. A trapped instance is never reused "
                        "(default: none; every instance serves one actor)")
    s.add_argument("--data", type=Path, default=Path("wkdata"),
                   help="data directory: actor databases and the index (default ./wkdata)")
    s.add_argument("--cache-dir", type=Path, default=None, metavar="DIR",
                   help="compiled components, shared by every server and data directory "
                        "(default $XDG_CACHE_HOME/wkhost/compiled or "
                        "~/.cache/wkhost/compiled)")
    s.add_argument("--host", default="127.0.0.1", help="address to listen on (default %(default)s)")
    s.add_argument("--port", type=int, default=8080, help="port (default %(default)s; 0: any)")
    s.add_argument("--cpu-budget-ms", type=int, default=50,
                   help="CPU per event, metered as fuel (default %(default)s)")
    s.add_argument("--wall-budget-ms", type=int, default=30_000,
                   help="wall-clock time per event, calls included (default %(default)s)")
    s.add_argument("--memory-mb", type=int, default=256,
                   help="linear memory per instance (default %(default)s)")
    s.add_argument("--db-max-mb", type=int, default=1024,
                   help="size cap of each actor's database (default %(default)s)")
    s.add_argument("--db-max-value-mb", type=int, default=32,
                   help="largest string or blob one guest SQL statement may make (default "
                        "%(default)s); a workflow's journal loads as one such value")
    s.add_argument("--sql-memory-mb", type=int, default=1024,
                   help="SQLite's memory in this process, all actors together (default "
                        "%(default)s); past it, the statement that asks for more fails")
    s.add_argument("--max-actors", type=int, default=1_000_000,
                   help="actors kept on disk (default %(default)s, shared among "
                        "--processes); past it new actors get 507, existing ones are "
                        "served. An actor that keeps nothing leaves no file")
    s.add_argument("--min-free-disk-mb", type=int, default=128,
                   help="room kept free on the data directory's disk for existing actors "
                        "(default %(default)s, or a twentieth of a smaller disk): with "
                        "less, new actors get 507. 0: no floor")
    s.add_argument("--max-body-kb", type=int, default=1024,
                   help="largest request or response body (default %(default)s); a request "
                        "that declares a longer one gets 413 before any of it is read")
    s.add_argument("--max-response-headers", type=int, default=100,
                   help="most headers a guest's answer may carry; over it, the client gets "
                        "500 with the reason (default %(default)s)")
    s.add_argument("--max-response-header-kb", type=int, default=64,
                   help="most bytes of headers a guest's answer may carry, names and "
                        "values together; over it, the client gets 500 (default %(default)s)")
    s.add_argument("--header-timeout-s", type=float, default=10.0,
                   help="a request's head (its line and headers) must arrive whole within "
                        "this time of the connection's start, or of its first byte on a "
                        "kept-alive connection; else the connection is closed "
                        "(default %(default)s)")
    s.add_argument("--body-timeout-s", type=float, default=30.0,
                   help="a request's body must arrive whole within this time of its head; "
                        "else 408 and the connection is closed (default %(default)s)")
    s.add_argument("--keepalive-timeout-s", type=float, default=75.0,
                   help="a kept-alive connection idle this long between requests is "
                        "closed (default %(default)s)")
    s.add_argument("--processes", type=int, default=1, metavar="N",
                   help="serve with N processes, each owning a fixed share of the actors "
                        "and running its events on its own core; any of them takes any "
                        "request and passes it to the right one. About one core's worth "
                        "of events is what one process runs (default %(default)s; try the "
                        "number of cores)")
    # Set by the supervisor of --processes N for each process it starts.
    s.add_argument("--process", help=argparse.SUPPRESS)
    s.add_argument("--listen-fd", type=int, help=argparse.SUPPRESS)
    s.add_argument("--supervisor-pid", type=int, help=argparse.SUPPRESS)
    s.add_argument("--lock-fd", type=int, help=argparse.SUPPRESS)
    s.add_argument("--fake-clock-start", type=int, help=argparse.SUPPRESS)
    s.add_argument("--cores", help=argparse.SUPPRESS)
    s.add_argument("--cpu-affinity", choices=("auto", "off"), default="auto",
                   help="with --processes N: auto gives each process its own share of the "
                        "cores, one core each with as many processes as cores, when there "
                        "are at least N (about 20%% more workflows at concurrency 8 and 32 "
                        "on 2 cores); off lets the kernel place them (default %(default)s)")
    s.add_argument("--workers", type=int, default=16,
                   help="event threads per process, at most (default %(default)s). Only the "
                        "running events plus one work at once; the others stand in for "
                        "events that wait on the network or on another actor")
    s.add_argument("--running-events", type=int, default=0,
                   help="events running host or guest code at once; the other event threads "
                        "wait, and one waiting on the network, SQLite or another actor gives "
                        "its turn up (default 0: one fewer than the cores this process may "
                        "run on, at least 1)")
    s.add_argument("--max-pending", type=int, default=1024,
                   help="events waiting host-wide before new requests get 503 "
                        "(default %(default)s)")
    s.add_argument("--max-queue-per-actor", type=int, default=64,
                   help="events waiting on one actor before it gets 503 (default %(default)s)")
    s.add_argument("--max-live-instances", type=int, default=96,
                   help="instances kept warm; the least recently used idle ones go beyond "
                        "this (default %(default)s)")
    s.add_argument("--schema-images", action=argparse.BooleanOptionalAction, default=True,
                   help="start a class's new actors from the template with the schema its "
                        "on-init makes already applied, once an on-init has run one "
                        "schema-only script (default: on)")
    s.add_argument("--instance-pool", action=argparse.BooleanOptionalAction, default=True,
                   help="take instances from wasmtime's pooling allocator: a fresh instance "
                        "costs about a fifth less CPU, but a slot once used keeps 16 MiB of "
                        "guest heap resident until the host has had no live instance for "
                        "10 s (default on; --no-instance-pool for the least memory under "
                        "load)")
    s.add_argument("--allow-http", action="append", default=[], metavar="HOST[:PORT]",
                   help="let guests fetch from HOST (repeatable; default: nowhere)")
    s.add_argument("--admin-token-file", type=Path,
                   help="operator token file (default DATA/_host/admin-token, made if missing)")
    s.add_argument("--log-level", default="info",
                   choices=["debug", "info", "warning", "error"], help="(default %(default)s)")
    s.add_argument("--fake-clock", action="store_true",
                   help="testing only: a clock that moves only by POST /_wk/clock/advance")
    s.add_argument("--always-fresh-instance", action="store_true",
                   help="testing only: a new instance for every event (always replay)")
    s.set_defaults(run=run_serve)


def _pairs(items: list[str], what: str) -> list[tuple[str, str]]:
    out = []
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name or not value:
            print(f"wkhost: error: {what} takes NAME=VALUE, got {item!r}", file=sys.stderr)
            raise SystemExit(2)  # bad usage
        out.append((name, value))
    return out


def run_serve(args: argparse.Namespace) -> int:  # returns only for bad usage
    logs.setup(args.log_level)
    try:
        actors, access = served_classes(_pairs(args.actor, "--actor"),
                                        _pairs(args.access, "--access"), args.reuse_instances)
        policy = FetchPolicy.parse(args.allow_http)
    except (UsageError, ValueError) as e:
        print(f"wkhost: error: {e}", file=sys.stderr)
        return 2
    config = HostConfig(
        data_dir=args.data, cache_dir=args.cache_dir or default_cache_dir(),
        cpu_budget_ms=args.cpu_budget_ms, wall_budget_ms=args.wall_budget_ms,
        memory_limit_bytes=args.memory_mb << 20,
        db_max_bytes=args.db_max_mb << 20, max_body_bytes=args.max_body_kb << 10,
        db_max_value_bytes=args.db_max_value_mb << 20, sql_memory_bytes=args.sql_memory_mb << 20,
        max_actors=args.max_actors, min_free_disk_bytes=args.min_free_disk_mb << 20,
        workers=args.workers, running_events=args.running_events,
        max_pending_events=args.max_pending,
        max_queue_per_actor=args.max_queue_per_actor, http=policy,
        always_fresh_instance=args.always_fresh_instance,
        max_live_instances=args.max_live_instances, instance_pool=args.instance_pool,
        schema_images=args.schema_images,
        max_response_headers=args.max_response_headers,
        max_response_header_bytes=args.max_response_header_kb << 10,
        header_timeout_s=args.header_timeout_s, body_timeout_s=args.body_timeout_s,
        keepalive_timeout_s=args.keepalive_timeout_s,
    )
    opts = ServeOptions(actors, access, args.host, args.port, args.admin_token_file,
                        args.fake_clock, reuse_instances=frozenset(args.reuse_instances),
                        fake_clock_start_ms=args.fake_clock_start)
    wrong = _out_of_range(args)
    if wrong:
        print(f"wkhost: error: {wrong}", file=sys.stderr)
        return 2
    from ..errors import HostError

    rc = 0
    try:
        # Whatever can be checked without compiling, before the first compile (6-25 s).
        lock_fd, bound = preflight(config, opts, args.lock_fd, "--cache-dir" if args.cache_dir
                                   else "the compile cache (--cache-dir)",
                                   bind=args.process is None)
        if args.process is not None:  # one of --processes N, started by the supervisor
            me, count = (int(x) for x in args.process.split("/"))
            if args.cores:  # first: the host's threads take this process's affinity
                pin_to_cores([int(c) for c in args.cores.split(",")])
            die_with(args.supervisor_pid)
            config.partition = Partition(me, count)
            asyncio.run(serve(config, opts, inherited_socket(args.listen_fd)))
        elif args.processes > 1:
            rc = supervise(config, opts, args.processes, args.argv, lock_fd,
                           pin_cores=args.cpu_affinity == "auto", bound=bound)
        else:
            asyncio.run(serve(config, opts, bound=bound))
    except HostError as e:
        print(f"wkhost: error: {e}", file=sys.stderr)
        rc = 1
    except OSError as e:  # not "[Errno 13] Permission denied: 'x'": the file, then why
        where = f"{e.filename}: " if e.filename else ""
        print(f"wkhost: error: {where}{e.strerror or e}", file=sys.stderr)
        rc = 1
    _exit_without_finalizing(rc)


def _out_of_range(args: argparse.Namespace) -> str | None:
    """What is wrong with a number of `serve`'s, if anything."""
    if not 1 <= args.processes <= MAX_PROCESSES:
        return f"--processes takes 1 to {MAX_PROCESSES}"
    for flag in ("header_timeout_s", "body_timeout_s", "keepalive_timeout_s"):
        if not getattr(args, flag) > 0:
            return f"--{flag.replace('_', '-')} takes a time above 0"
    for flag in ("max_response_headers", "max_response_header_kb"):
        if getattr(args, flag) < 0:
            return f"--{flag.replace('_', '-')} takes a number of at least 0"
    return None


def _exit_without_finalizing(rc: int) -> NoReturn:
    """End the server's process without the interpreter's finalization.

    Why: wasmtime's runtime threads deliver a guest's output to a Python callback, and may
    still be delivering the last of it as the process ends. A thread that takes the GIL
    once finalization has begun is ended by CPython with pthread_exit, which unwinds
    through Rust frames that must not unwind: the process then aborts (SIGABRT) after a
    clean stop. Seen once in about 45 runs of a test whose guests print as it stops. By
    now the host has closed every database; only the logs and stdio need flushing.
    """
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(rc)


# -- talking to a running server ------------------------------------------------------------
_CALL_EPILOG = """\
examples:
  wkhost call counter/c1 /count                    GET /count of actor c1 of class counter
  wkhost call counter/c1 /incr -X POST             another method
  wkhost call app/web /orders/o1 -d '{"qty": 1}'   POST a body (-d @FILE sends a file)
  wkhost call orders/o1 /wk-workflow/v1/status -X POST
                                                   a workflow's status, its CBOR decoded
  wkhost call counter/c1 /count -o count.json      the answer's bytes into a file
  wkhost call counter/c1 /count -i                 the status line too (HTTP 200)

On a terminal, the answer is shown by its content type: text and JSON as they are, CBOR
decoded (as JSON, bytes as h'..'), anything else as a note of its size and type. To a
pipe or a file, or with --raw, the bytes come as they are."""


def _add_call(sub: Any) -> None:
    c = sub.add_parser("call", help="send one request to an actor (as an operator)",
                       description="Send one request to CLASS/ID through the operator path "
                                   "and print the answer.",
                       epilog=_CALL_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    _with_exit_codes(c, "call")
    c.add_argument("target", metavar="CLASS/ID", help="the actor, e.g. counter/c1")
    c.add_argument("path", nargs="?", default="/", help="path inside the actor (default /)")
    c.add_argument("--method", "-X", default=None, help="default GET, or POST with --body")
    c.add_argument("--body", "-d", default=None, help="TEXT, or @FILE to send a file")
    c.add_argument("--include", "-i", action="store_true", help="print the status line too")
    shown = c.add_mutually_exclusive_group()
    shown.add_argument("--raw", action="store_true",
                       help="write the answer's bytes as they are, even to a terminal")
    shown.add_argument("--output", "-o", type=Path, metavar="FILE",
                       help="write the answer's bytes to FILE (the status line, with -i, "
                            "still goes to stdout)")
    add_server_args(c)
    c.set_defaults(run=run_call)


def run_call(args: argparse.Namespace) -> int:
    from urllib.parse import quote

    cls, sep, actor_id = args.target.partition("/")
    if not sep or not cls or not actor_id:
        raise CliError("the target is CLASS/ID, e.g. counter/c1")
    checked_target(cls, actor_id)
    body = None if args.body is None else (
        read_input_file(args.body[1:]) if args.body.startswith("@") else args.body.encode())
    if args.output is not None and (args.output.is_dir() or not args.output.parent.is_dir()):
        raise CliError(f"-o {args.output}: not a file in an existing directory")
    method = args.method or ("POST" if body is not None else "GET")
    path = args.path if args.path.startswith("/") else "/" + args.path
    url = f"{args.server.rstrip('/')}/{cls}/{quote(actor_id, safe='')}{path}"
    answer = http_request(method, url, operator_token(args), body)
    if args.include:
        print(f"HTTP {answer.status}")
    _show(answer, args)
    return Exit.OK if answer.status < 400 else Exit.FAILED


def _show(answer: Answer, args: argparse.Namespace) -> None:
    """The answer's body: to -o FILE, raw to a pipe (or --raw), else readable."""
    if args.output is not None:
        try:
            args.output.write_bytes(answer.body)
        except OSError as e:
            raise CliError(f"cannot write {args.output}: {e.strerror}", Exit.FAILED) from None
    elif args.raw or not sys.stdout.isatty():
        sys.stdout.flush()  # the status line first
        sys.stdout.buffer.write(answer.body)
    elif answer.body:
        text = readable_body(answer.body, answer.content_type)
        print(text, end="" if text.endswith("\n") else "\n")


def readable_body(data: bytes, content_type: str) -> str:
    """How `wkhost call` shows an answer on a terminal: what it can decode, decoded;
    anything else (or text with control characters, which could drive the terminal) as
    a note of what it is."""
    kind = content_type.split(";")[0].strip().lower()
    if kind == "application/cbor" or kind.endswith("+cbor"):
        shown = _cbor_text(data)
        if shown is not None:
            return shown
    elif not kind or kind.startswith("text/") or kind == "application/json" \
            or kind.endswith("+json"):
        text = _printable(data, content_type)
        if text is not None:
            return text
    size = f"{len(data)} byte" + ("" if len(data) == 1 else "s")
    return (f"<{size} of {kind or 'an unnamed type'}: not shown on a terminal; "
            "--raw prints them, -o FILE saves them>")


def _printable(data: bytes, content_type: str) -> str | None:
    charset = content_type.partition("charset=")[2].split(";")[0].strip().strip('"')
    try:
        text = data.decode(charset or "utf-8")
    except (UnicodeDecodeError, LookupError):
        return None
    return None if _CONTROL.search(text) else text


# C0 and C1 control characters but tab and the line ends: an escape sequence, say, that
# would drive the terminal rather than be read.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def _cbor_text(data: bytes) -> str | None:
    """One CBOR item and nothing after it, as indented JSON; None if it is not that."""
    fp = io.BytesIO(data)
    try:
        doc = cbor2.CBORDecoder(fp).decode()
    except Exception:  # whatever stops the decoder: then it is shown as bytes
        return None
    if fp.tell() != len(data):
        return None
    return json.dumps(_jsonish(doc), indent=2, ensure_ascii=False)


def _jsonish(v: Any) -> Any:
    """A decoded CBOR value in JSON's terms: bytes as h'hex' (CBOR's diagnostic notation),
    a tag as {"tag N": value}, a key that is not text as its JSON."""
    if isinstance(v, dict):
        return {k if isinstance(k, str) else json.dumps(_jsonish(k)): _jsonish(x)
                for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_jsonish(x) for x in v]
    if isinstance(v, bytes | bytearray):
        return f"h'{bytes(v).hex()}'"
    if isinstance(v, cbor2.CBORTag):
        return {f"tag {v.tag}": _jsonish(v.value)}
    if v is None or isinstance(v, bool | int | float | str):
        return v
    return str(v)  # a date, a decimal, a simple value: its text


class Answer(NamedTuple):
    status: int
    content_type: str
    body: bytes


def http_request(method: str, url: str, token: str, body: bytes | None = None,
                 headers: dict[str, str] | None = None) -> Answer:
    """One request as the operator; any HTTP status is an answer. No answer at all (no
    connection, a timeout, a broken reply) is CliError with exit 3."""
    req = urllib.request.Request(url, data=body, method=method)
    req.add_header("Authorization", f"Bearer {token}")
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return Answer(resp.status, resp.headers.get("Content-Type", ""), resp.read())
    except urllib.error.HTTPError as e:
        with e:
            return Answer(e.code, e.headers.get("Content-Type", "") if e.headers else "",
                          e.read())
    except urllib.error.URLError as e:
        raise CliError(f"cannot reach {url}: {e.reason}", Exit.UNREACHABLE) from None
    except (OSError, http.client.HTTPException) as e:
        raise CliError(f"no answer from {url}: {e or type(e).__name__}",
                       Exit.UNREACHABLE) from None


_ACTORS_EPILOG = """\
examples:
  wkhost actors counter                    the ids of class counter's actors
  wkhost actors counter --limit 100        the first 100
  wkhost actors counter --after c42        the ids after c42 (the next page)
  wkhost actors counter | wc -l            how many (up to --limit)

Ids come one per line, in order. A full page ends with a line on stderr that says where
the next one begins."""


_MAX_LIMIT = 10_000  # the host's most ids a request (host/frontdoor.py)


def _add_actors(sub: Any) -> None:
    a = sub.add_parser("actors", help="list the actors of a class",
                       description="List the ids of a class's actors, as the host knows them.",
                       epilog=_ACTORS_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    _with_exit_codes(a, "actors")
    a.add_argument("cls", metavar="CLASS", help="the class, e.g. counter")
    a.add_argument("--after", default="", metavar="ID",
                   help="list the ids after this one (paging; default: from the first)")
    a.add_argument("--limit", type=int, default=1000, metavar="N",
                   help=f"list at most N ids, 1 to {_MAX_LIMIT} (default %(default)s)")
    add_server_args(a)
    a.set_defaults(run=run_actors)



def run_actors(args: argparse.Namespace) -> int:
    from urllib.parse import quote, urlencode

    checked_target(args.cls)
    if not 1 <= args.limit <= _MAX_LIMIT:
        raise CliError(f"--limit takes 1 to {_MAX_LIMIT}")
    q = urlencode({"after": args.after, "limit": args.limit})
    url = f"{args.server.rstrip('/')}/_wk/actors/{quote(args.cls, safe='')}?{q}"
    answer = http_request("GET", url, operator_token(args))
    if answer.status != 200:
        print(f"wkhost: {args.cls}: {answer.body.decode(errors='replace').strip()}",
              file=sys.stderr)
        return Exit.FAILED
    ids = json.loads(answer.body)["ids"]
    for actor_id in ids:
        print(actor_id)
    if len(ids) == args.limit:
        print(f"wkhost: --limit {args.limit} reached; more ids may follow: "
              f"--after {shlex.quote(ids[-1])}", file=sys.stderr)
    return Exit.OK


if __name__ == "__main__":
    sys.exit(main())
