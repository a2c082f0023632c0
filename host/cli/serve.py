"""`wkhost serve`: check what can be checked, then serve in this process, or supervise
--processes N of them (host/net/supervisor.py), each one of which runs this too."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import logging
import os
import sys
from pathlib import Path
from typing import Any, NoReturn

from .. import logs
from ..config import HostConfig
from ..errors import HostError
from ..events.classes import Access
from ..fetch import FetchPolicy
from ..fetch.via import check_via
from ..net.cores import pin_to_cores
from ..net.preflight import UsageError, preflight, served_classes
from ..net.serve import ServeOptions, serve
from ..net.supervisor import MAX_PROCESSES, die_with, inherited_socket, supervise
from ..partition import Partition
from ..storage.paths import check_class
from ..wire import SERVER_HEADERS
from .options import with_exit_codes
from .serve_flags import add_serve_options, host_config, processes


def add_serve(sub: Any) -> None:
    s = sub.add_parser(
        "serve", help="serve actor classes over HTTP",
        description="Serve actor classes: /{class}/{id}/{path} goes to that actor's handle.",
        epilog="example: wkhost serve --actor orders=orders.wasm --actor app=app.wasm "
               "--access orders=internal",
    )
    add_serve_options(s)
    with_exit_codes(s, "serve")
    s.set_defaults(run=run_serve)


def run_serve(args: argparse.Namespace) -> int:  # returns only for bad usage
    logs.setup(args.log_level, args.log_format)
    try:
        pairs, levels = _with_schedules(args.schedules, _pairs(args.actor, "--actor"),
                                        _pairs(args.access, "--access"))
        actors, access = served_classes(pairs, levels, args.reuse_instances)
        policy = FetchPolicy.parse(args.allow_http)
        if args.fetch_via is not None:
            if not args.fake_clock:
                raise UsageError("--fetch-via is for tests: give --fake-clock with it")
            policy = dataclasses.replace(policy, via=check_via(args.fetch_via))
    except (UsageError, ValueError) as e:
        print(f"wkhost: error: {e}", file=sys.stderr)
        return 2
    args.processes = processes(args)
    config = host_config(args, http=policy, schedule_class=args.schedules or "")
    wrong = _out_of_range(args)
    if wrong:
        print(f"wkhost: error: {wrong}", file=sys.stderr)
        return 2
    if args.schedules is not None and not _build_schedules(args.schedules, actors):
        return 1
    opts = serve_options(args, actors, access)
    _exit_without_finalizing(_served(config, opts, args))


def serve_options(args: argparse.Namespace, actors: list[tuple[str, Path]],
                  access: dict[str, Access]) -> ServeOptions:
    return ServeOptions(actors, access, args.host, args.port, args.admin_token_file,
                        args.fake_clock, tokens_file=args.tokens_file,
                        reuse_instances=frozenset(args.reuse_instances),
                        fake_clock_start_ms=args.fake_clock_start)


def _pairs(items: list[str], what: str) -> list[tuple[str, str]]:
    out = []
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name or not value:
            print(f"wkhost: error: {what} takes NAME=VALUE, got {item!r}", file=sys.stderr)
            raise SystemExit(2)  # bad usage
        out.append((name, value))
    return out


_SCHEDULES_BUILT = "(the schedule class, built at start)"


def _with_schedules(name: str | None, actors: list[tuple[str, str]],
                    access: list[tuple[str, str]]
                    ) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """`--schedules NAME`: the class NAME added, internal (its file comes once built)."""
    if name is None:
        return actors, access
    flag = f"--schedules {name}"
    try:
        check_class(name)
    except HostError as e:
        raise UsageError(f"{flag}: {e}") from None
    if any(n == name for n, _ in actors):
        raise UsageError(f"{flag}: --actor {name}=... serves another class by that name; "
                         "give --schedules another NAME")
    for n, level in access:
        if n == name and level != "internal":
            raise UsageError(f"{flag}: the schedule class is internal (only actors and "
                             f"operators may call it), not --access {name}={level}")
    return [*actors, (name, _SCHEDULES_BUILT)], [*access, (name, "internal")]


def _build_schedules(name: str, actors: list[tuple[str, Path]]) -> bool:
    """Build the schedule class (wkguest.schedule's app) with the build cache, and
    point class `name` at it. False (said on stderr) if it cannot be built."""
    from wkguest.schedule import APP

    from ..engine.build import BuildError, cached_build
    from ..engine.build_cache import default_cache_dir

    try:
        wasm = cached_build(APP, default_cache_dir(),
                            progress=lambda line: print(f"wkhost: {line}", file=sys.stderr))
    except (BuildError, OSError) as e:
        print(f"wkhost: error: --schedules: the schedule class cannot be built: {e}",
              file=sys.stderr)
        return False
    actors[:] = [(n, wasm if n == name else f) for n, f in actors]
    return True


def _out_of_range(args: argparse.Namespace) -> str | None:
    """What is wrong with a number of `serve`'s, if anything."""
    if not 1 <= args.processes <= MAX_PROCESSES:
        return f"--processes takes 1 to {MAX_PROCESSES}"
    if args.cluster and not args.node_id:
        return "--cluster needs --node-id NAME, unique in the cluster"
    for flag in ("header_timeout_s", "body_timeout_s", "keepalive_timeout_s"):
        if not getattr(args, flag) > 0:
            return f"--{flag.replace('_', '-')} takes a time above 0"
    # Below these, no answer fits, not even an empty one with the server's own headers.
    least = {"max_response_headers": len(SERVER_HEADERS), "max_response_header_kb": 1}
    for flag, floor in least.items():
        if getattr(args, flag) < floor:
            return f"--{flag.replace('_', '-')} takes a number of at least {floor}"
    return None


def _served(config: HostConfig, opts: ServeOptions, args: argparse.Namespace) -> int:
    """Serve until stopped: the exit code, with the error that stopped it, if any."""
    try:
        # Whatever can be checked without compiling, before the first compile (slow).
        lock_fd, bound = preflight(config, opts, args.lock_fd, "--cache-dir" if args.cache_dir
                                   else "the compile cache (--cache-dir)",
                                   bind=args.process is None)
        if args.process is not None:  # one of --processes N, started by the supervisor
            _serve_one_of_many(config, opts, args)
        elif args.processes > 1:
            return supervise(config, opts, args.processes, args.argv, lock_fd,
                             pin_cores=args.cpu_affinity == "auto", bound=bound)
        else:
            asyncio.run(serve(config, opts, bound=bound))
    except HostError as e:
        print(f"wkhost: error: {e}", file=sys.stderr)
        return 1
    except OSError as e:  # not "[Errno 13] Permission denied: 'x'": the file, then why
        where = f"{e.filename}: " if e.filename else ""
        print(f"wkhost: error: {where}{e.strerror or e}", file=sys.stderr)
        return 1
    return 0


def _serve_one_of_many(config: HostConfig, opts: ServeOptions,
                       args: argparse.Namespace) -> None:
    me, count = (int(x) for x in args.process.split("/"))
    if args.cores:  # first: the host's threads take this process's affinity
        pin_to_cores([int(c) for c in args.cores.split(",")])
    die_with(args.supervisor_pid)
    if config.cluster_url:
        as_cluster_member(config, opts, me)
    else:
        config.partition = Partition(me, count)
    asyncio.run(serve(config, opts, inherited_socket(args.listen_fd)))


def as_cluster_member(config: HostConfig, opts: ServeOptions, me: int) -> None:
    """Process `me` of a node's `--processes N` in cluster mode: a member of the cluster
    of its own (NODE.K), which leases its own shards, in a data directory of its own; the
    cluster, not the process's share of the hash, places its actors (docs/cluster.md).
    The operator token stays the node's."""
    opts.admin_token_file = opts.admin_token_file or (
        config.data_dir / "_host" / "admin-token")
    config.node_id = f"{config.node_id}.{me}"
    config.data_dir = config.data_dir / "members" / str(me)


def _exit_without_finalizing(rc: int) -> NoReturn:
    """End the server's process without the interpreter's finalization.

    Why: wasmtime's runtime threads deliver a guest's output to a Python callback, and may
    still be delivering the last of it as the process ends. A thread that takes the GIL
    once finalization has begun is ended by CPython with pthread_exit, which unwinds
    through Rust frames that must not unwind: the process then aborts (SIGABRT) after a
    clean stop. Seen, rarely, in a test whose guests print as it stops. By now the host
    has closed every database; only the logs and stdio need flushing.
    """
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(rc)
