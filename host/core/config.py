"""Settings of one host process, with the defaults a user gets from `wkhost serve`."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ..engine.components import InstancePool, default_cache_dir
from ..fetch.transport import FetchPolicy
from ..partition import Partition


def usable_cores() -> int:
    """The cores this process may run on: fewer than the machine's in a cpuset, or in one
    of `serve --processes N` (host/supervisor.py)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


@dataclass
class HostConfig:
    data_dir: Path = Path("wkdata")
    # Compiled components, keyed by content; default the user's shared cache
    # (engine.default_cache_dir: $XDG_CACHE_HOME/wkhost/compiled), so a new data directory
    # compiles nothing compiled before. Shareable between hosts: entries are written
    # atomically.
    cache_dir: Path | None = None
    # Budgets per event.
    cpu_budget_ms: int = 50
    wall_budget_ms: int = 30_000
    memory_limit_bytes: int = 256 << 20
    # Storage.
    db_max_bytes: int = 1 << 30
    # The largest string or blob one guest statement may make (host/sql_policy.py).
    db_max_value_bytes: int = 32 << 20
    # SQLite's memory in this process, every actor's together: past it, the statement
    # that asks for more fails, and nothing else does (host/sql_policy.py).
    sql_memory_bytes: int = 1 << 30
    # New actors are refused (507) past this many on disk, or with less than this much
    # free on the data directory's disk (or a twentieth of a disk smaller than twenty
    # times it); existing actors are served all the same (host/admission.py). An actor
    # that keeps nothing leaves no file and counts for none.
    max_actors: int = 1_000_000
    min_free_disk_bytes: int = 128 << 20
    # Payloads crossing the boundary (bodies, responses). Far below what a WIT string can
    # carry (10 MB measured), and the front door refuses bigger bodies with 413.
    max_body_bytes: int = 1 << 20
    # The front door's limits (Hardening I).
    # A guest's answer: at most this many headers, of at most this many bytes on the wire
    # in all; over either, the client gets 500 with the reason (host/wire.py).
    max_response_headers: int = 100
    max_response_header_bytes: int = 64 << 10
    # A client's request head must arrive whole within header_timeout_s: of the
    # connection's start for its first request, of its first byte for a later one. Its
    # body must arrive within body_timeout_s of its head (a 1 MiB body at the default:
    # about 35 KB/s at least). A kept-alive connection idle for keepalive_timeout_s is
    # closed. So a client that holds a connection, sending nothing or a byte at a time,
    # is cut off (host/serve.py).
    header_timeout_s: float = 10.0
    body_timeout_s: float = 30.0
    keepalive_timeout_s: float = 75.0
    # Concurrency and backpressure.
    workers: int = 16
    # Events running host or guest code at once (event.RunGate); the other threads wait,
    # and a thread waiting on the network, SQLite or another actor gives its turn up.
    # 0: one fewer than the cores this process may run on (`usable_cores`), at least 1.
    # The spare core takes SQLite, fsyncs, the front door's loop and the janitor. On 2
    # cores, 1 running event against 2: 800 cold wakes due at once 174/181 against
    # 167/161 wakes/s at 5.9 against 10 ms of CPU each (a fresh instance's copy-on-write
    # faults send no TLB-shootdown IPIs while no other thread of the host runs guest
    # code); three-step workflows through `serve` at concurrency 8, 105/107 against 97/96
    # wf/s at 9.6 against 15 ms of CPU each.
    running_events: int = 0
    max_pending_events: int = 1024   # queued host-wide before the front door says 503
    max_queue_per_actor: int = 64    # events waiting on one actor before 503
    max_call_depth: int = 16
    # Instances kept warm (about 16 MiB each with the pool, 9 without): idle ones are
    # dropped, with their database connection, so memory and file descriptors stay
    # bounded however many actors exist.
    max_live_instances: int = 96
    idle_instance_s: float = 30.0
    # An actor whose alarm event leaves it asleep keeps its instance this long if it was
    # asked something within this time (a client following a workflow it just started).
    followed_s: float = 5.0
    # Classes served with reuse_instances (`--reuse-instances`) keep up to this many
    # instances that their actors let go, for their next new actors (host/spares.py),
    # each for at most spare_idle_s: a quiet host still gets to release the pool's pages.
    spare_instances: int = 16
    spare_idle_s: float = 5.0
    # Instances from wasmtime's pooling allocator (see engine.InstancePool): slots for the
    # live cap plus room for the events in flight; each reserves 4 GiB of address space.
    # A fresh instance starts without most of its page faults (a 5,000-position replay
    # on a fresh instance: 12 against 16 ms). The price: a slot once used keeps 16 MiB
    # resident until no instance has lived for pool_release_idle_s, when the janitor
    # gives every idle slot's pages back (engine.PoolMemory).
    instance_pool: bool = True
    pool_keep_resident_bytes: int = 16 << 20
    # With no instance alive this long, the janitor releases every idle slot's pages.
    pool_release_idle_s: float = 10.0
    pool_warm_slots: int = 4
    # Guest stdout/stderr kept per event before the rest is dropped (logged with the actor).
    max_guest_output_bytes: int = 16 << 10
    # Retry of a failed on-alarm whose event did not re-set the alarm.
    alarm_retry_base_ms: int = 1_000
    alarm_retry_max_ms: int = 300_000
    # New actors of a class whose on-init ran one schema-only script start from an image
    # of the template with it applied (host/sqlite.py, schema images).
    schema_images: bool = True
    http: FetchPolicy = field(default_factory=FetchPolicy)
    # Which actors this process serves, with `wkhost serve --processes N` (host/partition.py).
    partition: Partition = field(default_factory=Partition)
    # Test-only: drop every instance after each event (the "always replay" mode).
    always_fresh_instance: bool = False

    def run_slots(self) -> int:
        return self.running_events or max(1, usable_cores() - 1)

    def pool(self) -> InstancePool | None:
        if not self.instance_pool:
            return None
        return InstancePool(instances=self.max_live_instances + 4 * self.workers,
                            max_memory_bytes=self.memory_limit_bytes,
                            keep_resident_bytes=self.pool_keep_resident_bytes,
                            warm_slots=self.pool_warm_slots)

    def compile_cache(self) -> Path:
        return self.cache_dir or default_cache_dir()

    def fuel_per_event(self) -> int:
        from ..engine.components import FUEL_PER_MS

        return self.cpu_budget_ms * FUEL_PER_MS
