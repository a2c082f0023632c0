"""The host's Prometheus instruments (`/_wk/metrics`, host/net/metrics_route.py).

They live in a registry of the host's own, `REGISTRY`, not prometheus_client's default:
what a user's code or a library registers there never shows up here, and a test that
reads this registry reads only the host's figures. One `wkhost serve` process is one
host, so the registry is the process's; with `--processes N` each process keeps its own,
and the route sums them (see host/net/metrics_route.py for why not multiprocess mode).

Labels are bounded: a class, an event's kind, an outcome, a WIT interface, never an
actor's id. The figures read off the host's state at a scrape (the queue's
depth, the alarms pending, instances by status, RSS) are not here: the route reads them.

What the hot path does: an event and a host call note their time in a Tally (host/
tally.py: a table per thread, no lock), so a host call costs a clock read on each side and
one note, and an event two notes (its time, its fuel); the rest are prometheus_client's
own instruments, off the hot path (a refusal, an fsync, an alarm's fire).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from .tally import Row, Tally, buckets, grouped

REGISTRY = CollectorRegistry(auto_describe=True)

# WKHOST_METRICS=off: the hooks below do nothing and a host call is not timed, for
# bench/bench_observe.py alone (what the metrics cost, against the same host without them;
# the route still answers, with zeros). Read once, at import: with it on or off, an event
# and a host call test nothing.
ON = os.environ.get("WKHOST_METRICS", "") != "off"

# How an event ended (wkhost_events' `outcome`): its guest's call returned, or trapped; of the
# traps, those the host's budgets cut (CPU, the wall clock or the deadline the guest set
# itself) and those the memory cap caused; `error`: the host could not run it (its
# database, its deadline before it began).
OK, TRAP, CPU_CUT, WALL_CUT, MEMORY_CAP, ERROR = (
    "ok", "trap", "cpu_cut", "wall_cut", "memory_cap", "error")
OUTCOMES = (OK, TRAP, CPU_CUT, WALL_CUT, MEMORY_CAP, ERROR)

# Refusals under backpressure (wkhost_refusals' `reason`): the host's queue of waiting events
# is full (--max-pending), one actor's is (--max-queue-per-actor), or every instance
# slot is busy.
HOST_QUEUE, ACTOR_QUEUE, INSTANCES = "host_queue", "actor_queue", "instances"

# What was fsynced (wkhost_fsyncs' `file`): an actor's WAL for a durable write, a directory's
# entry (a new database, the index), a file's data (the index's files).
WAL, DIRECTORY, FILE = "wal", "directory", "file"

_SECONDS = (.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30)
_CALL_SECONDS = (.00001, .00005, .0001, .0005, .001, .005, .01, .05, .1, .5, 1, 5, 30)
_FUEL = (1e5, 1e6, 5e6, 1e7, 5e7, 1e8, 5e8, 1e9, 5e9, 1e10)
_LATE = (.01, .05, .1, .5, 1, 5, 10, 60, 300, 3600)

# The hot path's, in Tallies (host/tally.py): written out by `_HotPath` at a scrape.
EVENT_TIMES = Tally(_SECONDS)     # by (class, kind, outcome)
EVENT_FUEL = Tally(_FUEL)         # by class
HOST_CALL_TIMES = Tally(_CALL_SECONDS)  # by interface

REFUSALS = Counter("wkhost_refusals", "Requests and calls refused under backpressure "
                   "(503, retry), by reason", ("reason",), registry=REGISTRY)
ALARM_LATENESS = Histogram("wkhost_alarm_lateness_seconds", "How long after its time an "
                           "alarm's on-alarm began", buckets=_LATE, registry=REGISTRY,
                           unit="seconds")
FSYNCS = Counter("wkhost_fsyncs", "fsyncs and fdatasyncs made, by what was synced",
                 ("file",), registry=REGISTRY)

MEMORY_EVICTIONS = Counter("wkhost_memory_evictions", "Idle actors let go (instance and "
                           "database) to keep the RSS under --memory-budget",
                           registry=REGISTRY)

_refused = {r: REFUSALS.labels(r) for r in (HOST_QUEUE, ACTOR_QUEUE, INSTANCES)}
_synced = {f: FSYNCS.labels(f) for f in (WAL, DIRECTORY, FILE)}


def refused(reason: str) -> None:
    _refused[reason].inc()


def fsynced(file: str) -> None:
    _synced[file].inc()


def evicted_for_memory(n: int) -> None:
    if n:
        MEMORY_EVICTIONS.inc(n)


def alarm_late(seconds: float) -> None:
    ALARM_LATENESS.observe(seconds)


def event_ended(cls: str, kind: str, outcome: str, seconds: float, fuel: int) -> None:
    EVENT_TIMES.note((cls, kind, outcome), seconds)
    if fuel:
        EVENT_FUEL.note(cls, fuel)


def _unbound(*_args: object) -> None:
    """Every hook, with the metrics off."""


if not ON:
    # A function redefined, which mypy refuses, and the point here: no test per call.
    refused = fsynced = alarm_late = event_ended = _unbound  # type: ignore[assignment]
    evicted_for_memory = _unbound  # type: ignore[assignment]


class _HotPath(Collector):
    """The Tallies, as Prometheus's families."""

    def collect(self) -> Iterator[Metric]:
        times = EVENT_TIMES.totals()
        events = CounterMetricFamily("wkhost_events", "Events run, by class, kind "
                                     "(request or alarm) and outcome",
                                     labels=("class", "kind", "outcome"))
        for key, row in times.items():
            assert isinstance(key, tuple)
            events.add_metric([str(k) for k in key], row[0])
        yield events
        yield _histogram("wkhost_event_duration_seconds", "An event's time, from its "
                         "actor's lock taken to its end, by class and kind", ("class", "kind"),
                         EVENT_TIMES.bounds, grouped(times, (0, 1)), "seconds")
        yield _histogram("wkhost_event_fuel_units", "Fuel an event's guest calls burned (a "
                         "CPU cut burned its whole budget), by class", ("class",),
                         EVENT_FUEL.bounds, {(k,): r for k, r in EVENT_FUEL.totals().items()},
                         "units")
        yield _histogram("wkhost_host_call_duration_seconds", "Host calls from guests and "
                         "their time, waits included (a lock, the disk, the network), by "
                         "WIT interface: _count is the calls", ("interface",),
                         HOST_CALL_TIMES.bounds,
                         {(k,): r for k, r in HOST_CALL_TIMES.totals().items()}, "seconds")


def _histogram(name: str, doc: str, labels: tuple[str, ...], bounds: tuple[float, ...],
               rows: dict[tuple[object, ...], Row], unit: str) -> HistogramMetricFamily:
    fam = HistogramMetricFamily(name, doc, labels=labels, unit=unit)
    for key, row in rows.items():
        fam.add_metric([str(k) for k in key], list(buckets(bounds, row)), sum_value=row[1])
    return fam


REGISTRY.register(_HotPath())
