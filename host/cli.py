"""The `wkhost` command line. Exit codes: 0 ok, 1 the operation failed, 2 bad usage."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, NoReturn

from . import logs
from .build import add_build_command
from .cli_options import add_server_args, operator_token
from .config import HostConfig
from .http_fetch import FetchPolicy
from .partition import Partition
from .serve import ServeOptions, lock_data_dir, serve
from .supervisor import MAX_PROCESSES, die_with, inherited_socket, pin_to_cores, supervise
from .workflow_cli import add_workflow_command


def main(argv: list[str] | None = None) -> int:
    parser = make_parser()
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # for serve --processes N
    if not getattr(args, "run", None):
        parser.print_help()
        return 2
    try:
        return int(args.run(args))
    except KeyboardInterrupt:
        return 130


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="wkhost",
        description="A durable-execution host for WebAssembly actors.",
        epilog="Run `wkhost COMMAND --help` for a command's options.",
    )
    sub = p.add_subparsers(title="commands", metavar="COMMAND")
    _add_serve(sub)
    _add_call(sub)
    _add_actors(sub)
    add_build_command(sub)
    add_workflow_command(sub)
    return p


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
                   help="data directory: actor databases, index, cache (default ./wkdata)")
    s.add_argument("--cache-dir", type=Path, default=None,
                   help="compiled components (default DATA/_host/cache)")
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
    actors = [(n, Path(f)) for n, f in _pairs(args.actor, "--actor")]
    access: dict[str, Any] = {}
    for name, value in _pairs(args.access, "--access"):
        if value not in ("internal", "public"):
            print(f"wkhost: error: --access {name}= takes internal or public", file=sys.stderr)
            return 2
        access[name] = value
    served = {n for n, _ in actors}
    reuse = set(args.reuse_instances)
    for flag, names in (("--access", set(access)), ("--reuse-instances", reuse)):
        if names - served:
            print(f"wkhost: error: {flag} names no served class: {sorted(names - served)}",
                  file=sys.stderr)
            return 2
    try:
        policy = FetchPolicy.parse(args.allow_http)
    except ValueError as e:
        print(f"wkhost: error: {e}", file=sys.stderr)
        return 2
    config = HostConfig(
        data_dir=args.data, cache_dir=args.cache_dir, cpu_budget_ms=args.cpu_budget_ms,
        wall_budget_ms=args.wall_budget_ms, memory_limit_bytes=args.memory_mb << 20,
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
                        args.fake_clock, reuse_instances=frozenset(reuse),
                        fake_clock_start_ms=args.fake_clock_start)
    wrong = _out_of_range(args)
    if wrong:
        print(f"wkhost: error: {wrong}", file=sys.stderr)
        return 2
    from .errors import HostError

    rc = 0
    try:
        # First, before anything is compiled or written: one server per data directory.
        lock_fd = lock_data_dir(config.data_dir, args.lock_fd)
        if args.process is not None:  # one of --processes N, started by the supervisor
            me, count = (int(x) for x in args.process.split("/"))
            if args.cores:  # first: the host's threads take this process's affinity
                pin_to_cores([int(c) for c in args.cores.split(",")])
            die_with(args.supervisor_pid)
            config.partition = Partition(me, count)
            asyncio.run(serve(config, opts, inherited_socket(args.listen_fd)))
        elif args.processes > 1:
            rc = supervise(config, opts, args.processes, args.argv, lock_fd,
                           pin_cores=args.cpu_affinity == "auto")
        else:
            asyncio.run(serve(config, opts))
    except (HostError, OSError) as e:
        print(f"wkhost: error: {e}", file=sys.stderr)
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
def _add_call(sub: Any) -> None:
    c = sub.add_parser("call", help="send one request to an actor (as an operator)",
                       description="Send one request to CLASS/ID through the operator path "
                                   "and print the answer.")
    c.add_argument("target", metavar="CLASS/ID", help="the actor, e.g. counter/c1")
    c.add_argument("path", nargs="?", default="/", help="path inside the actor (default /)")
    c.add_argument("--method", "-X", default=None, help="default GET, or POST with --body")
    c.add_argument("--body", "-d", default=None, help="TEXT, or @FILE to send a file")
    c.add_argument("--include", "-i", action="store_true", help="print the status line too")
    add_server_args(c)
    c.set_defaults(run=run_call)


def run_call(args: argparse.Namespace) -> int:
    from urllib.parse import quote

    cls, sep, actor_id = args.target.partition("/")
    if not sep or not cls or not actor_id:
        print("wkhost: error: the target is CLASS/ID, e.g. counter/c1", file=sys.stderr)
        return 2
    body = _read_body(args.body)
    method = args.method or ("POST" if body is not None else "GET")
    path = args.path if args.path.startswith("/") else "/" + args.path
    url = f"{args.server.rstrip('/')}/{cls}/{quote(actor_id, safe='')}{path}"
    status, data = http_request(method, url, operator_token(args), body)
    if args.include:
        print(f"HTTP {status}")
    sys.stdout.buffer.write(data)
    sys.stdout.flush()
    return 0 if status < 400 else 1


def _read_body(spec: str | None) -> bytes | None:
    if spec is None:
        return None
    if spec.startswith("@"):
        try:
            return Path(spec[1:]).read_bytes()
        except OSError as e:
            raise SystemExit(f"wkhost: error: cannot read {spec[1:]}: {e.strerror}") from None
    return spec.encode()


def http_request(method: str, url: str, token: str, body: bytes | None = None,
                 headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    req = urllib.request.Request(url, data=body, method=method)
    req.add_header("Authorization", f"Bearer {token}")
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except urllib.error.URLError as e:
        raise SystemExit(f"wkhost: error: cannot reach {url}: {e.reason}") from None


def _add_actors(sub: Any) -> None:
    a = sub.add_parser("actors", help="list the actors of a class",
                       description="List the ids of a class's actors, as the host knows them.")
    a.add_argument("cls", metavar="CLASS")
    a.add_argument("--after", default="", help="list ids after this one (paging)")
    a.add_argument("--limit", type=int, default=1000)
    add_server_args(a)
    a.set_defaults(run=run_actors)


def run_actors(args: argparse.Namespace) -> int:
    import json
    from urllib.parse import quote, urlencode

    q = urlencode({"after": args.after, "limit": args.limit})
    url = f"{args.server.rstrip('/')}/_wk/actors/{quote(args.cls, safe='')}?{q}"
    status, data = http_request("GET", url, operator_token(args))
    if status != 200:
        sys.stderr.write(data.decode(errors="replace"))
        return 1
    for actor_id in json.loads(data)["ids"]:
        print(actor_id)
    return 0


if __name__ == "__main__":
    sys.exit(main())
