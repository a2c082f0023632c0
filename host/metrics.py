"""The host's Prometheus instruments (`/_wk/metrics`, host/net/metrics_route.py).

They live in a registry of the host's own, `REGISTRY`, not prometheus_client's default:
what a user's code or a library registers there never shows up here, and a test that
reads this registry reads only the host's figures. One `wkhost serve` process is one
host, so the registry is the process's; with `--processes N` each process keeps its own,
and the route sums them (see host/net/metrics_route.py for why not multiprocess mode).

Labels are bounded: a class, an event's kind, an outcome, a WIT interface, never an
actor's id. The figures read off the host's state at a scrape (the queue's
depth, the alarms pending, instances by status, RSS) are not here: the route reads them.

What the hot path does: the call sites bind their labelled child once where they can
(interfaces/linker.py binds one per host function at link time), so a host call costs a
clock read on each side and one histogram observation (its _count is the calls), and an
event one counter bump and two observations.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram

REGISTRY = CollectorRegistry(auto_describe=True)

# How an event ended (EVENTS' `outcome`): its guest's call returned, or trapped; of the
# traps, those the host's budgets cut (CPU, the wall clock or the deadline the guest set
# itself) and those the memory cap caused; `error`: the host could not run it (its
# database, its deadline before it began).
OK, TRAP, CPU_CUT, WALL_CUT, MEMORY_CAP, ERROR = (
    "ok", "trap", "cpu_cut", "wall_cut", "memory_cap", "error")
OUTCOMES = (OK, TRAP, CPU_CUT, WALL_CUT, MEMORY_CAP, ERROR)

# Refusals under backpressure (REFUSALS' `reason`): the host's queue of waiting events
# is full (--max-pending), one actor's is (--max-queue-per-actor), or every instance
# slot is busy.
HOST_QUEUE, ACTOR_QUEUE, INSTANCES = "host_queue", "actor_queue", "instances"

# What was fsynced (FSYNCS' `file`): an actor's WAL for a durable write, a directory's
# entry (a new database, the index), a file's data (the index's files).
WAL, DIRECTORY, FILE = "wal", "directory", "file"

_SECONDS = (.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30)
_CALL_SECONDS = (.00001, .00005, .0001, .0005, .001, .005, .01, .05, .1, .5, 1, 5, 30)
_FUEL = (1e5, 1e6, 5e6, 1e7, 5e7, 1e8, 5e8, 1e9, 5e9, 1e10)
_LATE = (.01, .05, .1, .5, 1, 5, 10, 60, 300, 3600)

EVENTS = Counter("wkhost_events", "Events run, by class, kind (request or alarm) "
                 "and outcome", ("class", "kind", "outcome"), registry=REGISTRY)
EVENT_SECONDS = Histogram("wkhost_event_duration_seconds", "An event's time, from "
                          "its actor's lock taken to its end, by class and kind",
                          ("class", "kind"), buckets=_SECONDS, registry=REGISTRY)
EVENT_FUEL = Histogram("wkhost_event_fuel", "Fuel an event's guest calls burned (a CPU "
                       "cut burned its whole budget), by class", ("class",),
                       buckets=_FUEL, registry=REGISTRY)
HOST_CALL_SECONDS = Histogram("wkhost_host_call_duration_seconds", "Host calls from "
                              "guests and their time, waits included (a lock, the disk, "
                              "the network), by WIT interface: _count is the calls",
                              ("interface",), buckets=_CALL_SECONDS, registry=REGISTRY)
REFUSALS = Counter("wkhost_refusals", "Requests and calls refused under backpressure "
                   "(503, retry), by reason", ("reason",), registry=REGISTRY)
ALARM_LATENESS = Histogram("wkhost_alarm_lateness_seconds", "How long after its time an "
                           "alarm's on-alarm began", buckets=_LATE, registry=REGISTRY)
FSYNCS = Counter("wkhost_fsyncs", "fsyncs and fdatasyncs made, by what was synced",
                 ("file",), registry=REGISTRY)

_refused = {r: REFUSALS.labels(r) for r in (HOST_QUEUE, ACTOR_QUEUE, INSTANCES)}
_synced = {f: FSYNCS.labels(f) for f in (WAL, DIRECTORY, FILE)}


def refused(reason: str) -> None:
    _refused[reason].inc()


def fsynced(file: str) -> None:
    _synced[file].inc()


def event_ended(cls: str, kind: str, outcome: str, seconds: float, fuel: int) -> None:
    EVENTS.labels(cls, kind, outcome).inc()
    EVENT_SECONDS.labels(cls, kind).observe(seconds)
    if fuel:
        EVENT_FUEL.labels(cls).observe(fuel)
