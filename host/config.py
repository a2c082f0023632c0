"""Settings of one host process, with the defaults a user gets from `wkhost serve`.

A field that `wkhost serve` sets says so where it is defined (`flag(...)`): its option,
its help and its unit. The CLI makes its options from these (host/cli/serve_flags.py), so
each default, and the text that explains it, is written once, here.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import Field, dataclass, field, fields
from pathlib import Path
from typing import Any

from .engine.components import default_cache_dir
from .engine.pool import InstancePool
from .fetch import FetchError, FetchPolicy
from .fetch.policy import entry_for
from .flags import Flag, flag
from .partition import Partition

KiB = 1 << 10
MiB = 1 << 20

# Two defaults that the help of --instance-pool names as well.
POOL_KEEP_RESIDENT_BYTES = 16 * MiB
POOL_RELEASE_IDLE_S = 10.0


def usable_cores() -> int:
    """The cores this process may run on: fewer than the machine's in a cpuset, or in one
    of `serve --processes N` (host/net/supervisor.py)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


@dataclass
class HostConfig:
    data_dir: Path = flag(Path("wkdata"), "--data",
                          "data directory: actor databases and the index (default ./wkdata)",
                          parse=Path)
    # Compiled components, keyed by content; default the user's shared cache
    # (engine.default_cache_dir), so a new data directory compiles nothing compiled
    # before. Shareable between hosts: entries are written atomically.
    cache_dir: Path | None = flag(
        None, "--cache-dir", "compiled components, shared by every server and data directory "
        "(default $WKHOST_COMPILED_DIR, else $XDG_CACHE_HOME/wkhost/compiled or "
        "~/.cache/wkhost/compiled)",
        parse=Path, metavar="DIR")
    # Budgets per event.
    cpu_budget_ms: int = flag(50, "--cpu-budget-ms",
                              "CPU per event, metered as fuel (default %(default)s)")
    wall_budget_ms: int = flag(30_000, "--wall-budget-ms",
                               "wall-clock time per event, calls included (default %(default)s)")
    memory_limit_bytes: int = flag(256 * MiB, "--memory-mb",
                                   "linear memory per instance (default %(default)s)", unit=MiB)
    # Storage.
    db_max_bytes: int = flag(1024 * MiB, "--db-max-mb",
                             "size cap of each actor's database (default %(default)s)", unit=MiB)
    # The largest string or blob one guest statement may make (host/storage/policy.py).
    db_max_value_bytes: int = flag(
        32 * MiB, "--db-max-value-mb", "largest string or blob one guest SQL statement may "
        "make (default %(default)s); a workflow's journal loads as one such value", unit=MiB)
    # SQLite's memory in this process, every actor's together: past it, the statement
    # that asks for more fails, and nothing else does (host/storage/policy.py).
    sql_memory_bytes: int = flag(
        1024 * MiB, "--sql-memory-mb", "SQLite's memory in this process, all actors together "
        "(default %(default)s); past it, the statement that asks for more fails", unit=MiB)
    # New actors are refused (507) past this many on disk, or with less than this much
    # free on the data directory's disk (or a twentieth of a disk smaller than twenty
    # times it); existing actors are served all the same (host/runtime/admission.py).
    max_actors: int = flag(
        1_000_000, "--max-actors", "actors kept on disk (default %(default)s, shared among "
        "--processes); past it new actors get 507, existing ones are served. An actor that "
        "has written nothing holds no place, and leaves no file")
    min_free_disk_bytes: int = flag(
        128 * MiB, "--min-free-disk-mb", "room kept free on the data directory's disk for "
        "existing actors (default %(default)s, or a twentieth of a smaller disk): with less, "
        "new actors get 507. 0: no floor", unit=MiB)
    # Payloads crossing the boundary (bodies, responses). Far below what a WIT string can
    # carry, and the front door refuses bigger bodies with 413.
    max_body_bytes: int = flag(
        1024 * KiB, "--max-body-kb", "largest request or response body (default %(default)s); "
        "a request that declares a longer one gets 413 before any of it is read", unit=KiB)
    # The front door's limits (Hardening I).
    # A guest's answer: at most this many headers, of at most this many bytes on the wire
    # in all, the front door's own among them; over either, the client gets 500 with the
    # reason (host/wire.py). 99: Python's http.client refuses a head of 100 header lines
    # (it counts the empty line that ends them).
    max_response_headers: int = flag(
        99, "--max-response-headers", "most headers an answer may carry on the wire, the "
        "guest's and the server's own (Date, Server, Content-Type, Content-Length, "
        "Connection); over it, the client gets 500 with the reason (default %(default)s)")
    max_response_header_bytes: int = flag(
        64 * KiB, "--max-response-header-kb", "most bytes of headers an answer may carry "
        "on the wire, names and values together, the server's own among them; over it, "
        "the client gets 500 (default %(default)s)", unit=KiB)
    # A request's head is timed from the connection's start for its first request, from
    # its first byte for a later one; its body from its head. So a client that holds a
    # connection, sending nothing or a byte at a time, is cut off (host/net/serve.py).
    header_timeout_s: float = flag(
        10.0, "--header-timeout-s", "a request's head (its line and headers) must arrive "
        "whole within this time of the connection's start, or of its first byte on a "
        "kept-alive connection; else the connection is closed (default %(default)s)")
    body_timeout_s: float = flag(
        30.0, "--body-timeout-s", "a request's body must arrive whole within this time of "
        "its head; else 408 and the connection is closed (default %(default)s)")
    keepalive_timeout_s: float = flag(
        75.0, "--keepalive-timeout-s", "a kept-alive connection idle this long between "
        "requests is closed (default %(default)s)")
    # Concurrency and backpressure.
    workers: int = flag(
        16, "--workers", "event threads per process, at most (default %(default)s). Only the "
        "running events plus one work at once; the others stand in for events that wait on "
        "the network or on another actor")
    # Events running host or guest code at once (runtime/run_gate.py's RunGate). The default
    # leaves a core spare: it takes SQLite, fsyncs, the front door's loop and the janitor.
    # On 2 cores, 1 running event beats 2, for cold wakes due at once and for three-step
    # workflows through `serve` alike: while no other thread of the host runs guest code,
    # a fresh instance's copy-on-write faults send no TLB-shootdown IPIs.
    running_events: int = flag(
        0, "--running-events", "events running host or guest code at once; the other event "
        "threads wait, and one waiting on the network, SQLite or another actor gives its "
        "turn up (default %(default)s: one fewer than the cores this process may run on, "
        "at least 1)")
    max_pending_events: int = flag(
        1024, "--max-pending", "events waiting host-wide before new requests get 503 "
        "(default %(default)s)")
    max_queue_per_actor: int = flag(
        64, "--max-queue-per-actor",
        "events waiting on one actor before it gets 503 (default %(default)s)")
    max_call_depth: int = 16
    # Instances kept warm: idle ones are dropped, with their database connection, so
    # memory and file descriptors stay bounded however many actors exist.
    max_live_instances: int = flag(
        96, "--max-live-instances", "instances kept warm; the least recently used idle ones "
        "go beyond this (default %(default)s; --memory-budget may keep fewer)")
    # The server's RSS, kept under this: fewer instances kept warm (events/eviction.py's
    # live_cap), and over it, what is idle let go (runtime/memory_budget.py). An event in
    # flight is never cut for it. Off in a HostConfig made in code: a test's or a
    # benchmark's host shares its process with the test runner's own memory.
    memory_budget_bytes: int = flag(
        0, "--memory-budget", "the server's resident memory (RSS) is kept under this many "
        "MB, shared among --processes: fewer instances are kept warm, and over it the "
        "spare instances, the instance pool's idle pages and the least recently used idle "
        "actors are let go; events in flight are served even past it, with a warning "
        "(default %(default)s; 0 or none: no budget)", unit=MiB,
        parse=lambda v: 0 if v.strip().lower() in ("none", "off") else int(v),
        metavar="MB", serve_default=512 * MiB)
    idle_instance_s: float = 30.0
    # An actor whose alarm event leaves it asleep keeps its instance this long if it was
    # asked something within this time (a client following a workflow it just started).
    followed_s: float = 5.0
    # Classes served with reuse_instances (`--reuse-instances`) keep up to this many
    # instances that their actors let go, for their next new actors
    # (host/engine/spare_instances.py), each for at most spare_idle_s: a quiet host still
    # gets to release the pool's pages.
    spare_instances: int = 16
    spare_idle_s: float = 5.0
    # New actors of a class whose on-init ran one schema-only script start from an image
    # of the template with it applied (host/storage/images.py).
    schema_images: bool = flag(
        True, "--schema-images", "start a class's new actors from the template with the "
        "schema its on-init makes already applied, once an on-init has run one schema-only "
        "script (default: on)")
    # Instances from wasmtime's pooling allocator (see engine/pool.py's InstancePool): slots for the
    # live cap plus room for the events in flight; each reserves 4 GiB of address space.
    # A fresh instance starts without most of its page faults. The price: a slot once
    # used keeps pool_keep_resident_bytes resident until no instance has lived for
    # pool_release_idle_s, when the janitor gives every idle slot's pages back
    # (engine/pool.py's PoolMemory).
    instance_pool: bool = flag(
        True, "--instance-pool", "take instances from wasmtime's pooling allocator: a fresh "
        "instance costs less CPU, but a slot once used keeps "
        f"{POOL_KEEP_RESIDENT_BYTES // MiB} MiB of guest heap resident until the host has "
        f"had no live instance for {POOL_RELEASE_IDLE_S:g} s (default on; "
        "--no-instance-pool for the least memory under load)")
    pool_keep_resident_bytes: int = POOL_KEEP_RESIDENT_BYTES
    # With no instance alive this long, the janitor releases every idle slot's pages.
    pool_release_idle_s: float = POOL_RELEASE_IDLE_S
    pool_warm_slots: int = 4
    # Guest stdout/stderr kept per event before the rest is dropped (logged with the actor).
    max_guest_output_bytes: int = 16 * KiB
    # Retry of a failed on-alarm whose event did not re-set the alarm.
    alarm_retry_base_ms: int = 1_000
    alarm_retry_max_ms: int = 300_000
    http: FetchPolicy = field(default_factory=FetchPolicy)
    # The class `--schedules` serves (its schedules are the console's), "" for none.
    schedule_class: str = ""
    # What the front door serves besides the actors (host/net/frontdoor.py).
    console: bool = flag(
        True, "--console", "serve the web console under /_wk/console/ (default on; "
        "--no-console to leave it out)")
    metrics_route: bool = flag(
        True, "--metrics", "serve Prometheus metrics at /_wk/metrics (default on; "
        "--no-metrics to leave the route out)")
    # Traces (host/tracing.py): off without an endpoint.
    otlp_endpoint: str = flag(
        "", "--otlp-endpoint", "export OpenTelemetry traces over OTLP/HTTP to URL (its "
        "/v1/traces; needs wkhost[otel]); default off", metavar="URL")
    trace_propagate: str = flag(
        "", "--trace-propagate", "send the trace's traceparent with guests' fetches to "
        "these destinations only (entries as --allow-http's, comma-separated); default "
        "none", metavar="HOST[:PORT],...")
    # Cluster mode (docs/cluster.md): off without a store. The lease times are on
    # PostgreSQL's clock, except the deadline, which each node measures on its own.
    cluster_url: str = flag(
        "", "--cluster", "serve as a node of the cluster whose store is this PostgreSQL "
        "(postgresql://...); needs --node-id and --cluster-secret-file; default off",
        metavar="URL")
    node_id: str = flag(
        "", "--node-id", "this node's name in the cluster, unique and kept across "
        "restarts (default: none; needed with --cluster)", metavar="NAME")
    cluster_secret_file: Path | None = flag(
        None, "--cluster-secret-file", "a file holding the secret that every node of the "
        "cluster shares: it authenticates the requests the nodes pass each other "
        "(default: none; needed with --cluster)",
        parse=Path, metavar="FILE")
    advertise: str = flag(
        "", "--advertise", "where the other nodes reach this one (default: --host:--port)",
        metavar="HOST:PORT")
    lease_ttl_s: float = flag(10.0, "--lease-ttl", "seconds a shard's lease lasts "
                              "unless renewed (default %(default)s)", parse=float)
    lease_renew_s: float = flag(2.0, "--lease-renew", "seconds between renewals "
                                "(default %(default)s)", parse=float)
    lease_deadline_s: float = flag(
        7.0, "--lease-deadline", "seconds after sending a renewal that this node stops "
        "serving a shard it could not renew; below --lease-ttl (default %(default)s)",
        parse=float)
    snapshot_every: int = flag(
        200, "--snapshot-every", "fold an actor's log into a snapshot after this many "
        "changesets (default %(default)s)")
    snapshot_bytes: int = flag(
        4 * MiB, "--snapshot-mb", "... or after this many bytes of changesets "
        "(default %(default)s)", unit=MiB)
    # Which actors this process serves, with `wkhost serve --processes N` (host/partition.py).
    partition: Partition = field(default_factory=Partition)
    # Test-only: drop every instance after each event (the "always replay" mode).
    always_fresh_instance: bool = flag(
        False, "--always-fresh-instance",
        "testing only: a new instance for every event (always replay)")

    def run_slots(self) -> int:
        return self.running_events or max(1, usable_cores() - 1)

    def memory_budget(self) -> int:
        """This process's share of --memory-budget (0: none): each of `serve
        --processes N` keeps an Nth, so that the server's RSS stays under it."""
        return self.memory_budget_bytes // self.partition.count

    def pool(self) -> InstancePool | None:
        if not self.instance_pool:
            return None
        return InstancePool(instances=self.max_live_instances + 4 * self.workers,
                            max_memory_bytes=self.memory_limit_bytes,
                            keep_resident_bytes=self.pool_keep_resident_bytes,
                            warm_slots=self.pool_warm_slots)

    def compile_cache(self) -> Path:
        return self.cache_dir or default_cache_dir()

    def trace_targets(self) -> Callable[[Any], bool]:
        """Whether a fetch's target (fetch/policy.py's Target) may be sent the trace:
        one of --trace-propagate's entries, matched as --allow-http's are. Raises
        ValueError naming a bad entry."""
        entries = [e.strip() for e in self.trace_propagate.split(",") if e.strip()]
        policy = FetchPolicy.parse(entries)

        def allowed(target: Any) -> bool:
            try:
                entry_for(target, policy)
            except FetchError:
                return False
            return True

        return allowed

    def fuel_per_event(self) -> int:
        from .engine.components import FUEL_PER_MS

        return self.cpu_budget_ms * FUEL_PER_MS


def serve_flags() -> list[tuple[Field[Any], Flag]]:
    """The fields that `wkhost serve` sets, in their order here (its --help's order)."""
    return [(f, f.metadata["flag"]) for f in fields(HostConfig) if "flag" in f.metadata]
