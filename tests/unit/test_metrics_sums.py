"""The metrics' pieces that need no server: how a trap is told apart for the events'
`outcome`, the hot path's lock-free tallies, and how the figures of `--processes N` are
summed."""

from __future__ import annotations

import threading
from pathlib import Path

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.openmetrics import parser as openmetrics_parser
from prometheus_client.openmetrics.exposition import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from wkhost import metrics
from wkhost.events.actor_slot import ActorSlot
from wkhost.events.trapped import kind_of, trap_outcome
from wkhost.net.metrics_route import summed
from wkhost.tally import Tally, buckets
from wkhost.traps import TrapKind
from wkhost.types import ActorRef


def slot_that_wrote(*chunks: bytes) -> ActorSlot:
    slot = ActorSlot(ActorRef("c", "i"), Path("/nonexistent"))
    for chunk in chunks:
        slot.output.write(chunk, 1 << 20)
    return slot


def outcome_of(kind: TrapKind, slot: ActorSlot) -> str:
    return trap_outcome(kind_of(kind, False, None, slot.output))


def test_each_kind_of_trap_has_its_outcome() -> None:
    quiet = slot_that_wrote()
    assert outcome_of(TrapKind.CPU, quiet) == metrics.CPU_CUT
    assert outcome_of(TrapKind.WALL, quiet) == metrics.WALL_CUT
    assert outcome_of(TrapKind.NARROWED_DEADLINE, quiet) == metrics.WALL_CUT
    assert outcome_of(TrapKind.GUEST, quiet) == metrics.TRAP
    oom = slot_that_wrote(b"Traceback (most recent call last):\n", b"MemoryError\n")
    assert outcome_of(TrapKind.GUEST, oom) == metrics.MEMORY_CAP
    # A budget's cut stays a cut, whatever the guest wrote before it.
    assert outcome_of(TrapKind.CPU, oom) == metrics.CPU_CUT


def exposition(events: dict[str, int], depth: int, took: list[float]) -> str:
    registry = CollectorRegistry()
    counter = Counter("t_events", "events", ("outcome",), registry=registry)
    for outcome, n in events.items():
        counter.labels(outcome).inc(n)
    Gauge("t_depth", "depth", registry=registry).set(depth)
    histogram = Histogram("t_took_seconds", "took", buckets=(1, 10), registry=registry,
                          unit="seconds")
    for t in took:
        histogram.observe(t)
    return generate_latest(registry).decode()


def test_the_processes_figures_are_summed_series_by_series() -> None:
    """Each process's figures come in OpenMetrics; their sums go out in either format,
    units kept in OpenMetrics."""
    a = exposition({"ok": 3, "trap": 1}, 2, [0.5, 5])
    b = exposition({"ok": 4}, 5, [20])
    out = summed([a, b]).decode()
    got = {(s.name, tuple(sorted(s.labels.items()))): s.value
           for fam in text_string_to_metric_families(out) for s in fam.samples}
    opened = list(openmetrics_parser.text_string_to_metric_families(
        summed([a, b], as_openmetrics=True).decode()))
    assert got == {(s.name, tuple(sorted(s.labels.items()))): s.value
                   for fam in opened for s in fam.samples}
    assert {f.name: f.unit for f in opened}["t_took_seconds"] == "seconds"
    assert got == {
        ("t_events_total", (("outcome", "ok"),)): 7,
        ("t_events_total", (("outcome", "trap"),)): 1,
        ("t_depth", ()): 7,
        ("t_took_seconds_bucket", (("le", "1.0"),)): 1,
        ("t_took_seconds_bucket", (("le", "10.0"),)): 2,
        ("t_took_seconds_bucket", (("le", "+Inf"),)): 3,
        ("t_took_seconds_count", ()): 3,
        ("t_took_seconds_sum", ()): 25.5,
    }
    # As prometheus_client itself writes them.
    assert "# TYPE t_events_total counter" in out and "# TYPE t_took_seconds histogram" in out
    assert "_created" not in out


def test_a_tally_loses_nothing_between_threads() -> None:
    tally = Tally((1.0, 10.0))
    per_thread = 20_000

    def note_many(key: str) -> None:
        for i in range(per_thread):
            tally.note(key, (0.5, 5.0, 50.0)[i % 3])

    threads = [threading.Thread(target=note_many, args=(k,)) for k in ("a", "a", "a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    totals = tally.totals()
    a, b = totals["a"], totals["b"]
    assert a[0] == 3 * per_thread and b[0] == per_thread
    third = per_thread // 3 + 1  # 20,000 notes: 6,667 of the first, 6,667 and 6,666
    assert b[2:] == [third, third, per_thread - 2 * third]
    assert b[1] == third * 0.5 + third * 5.0 + (per_thread - 2 * third) * 50.0
    assert list(buckets(tally.bounds, b)) == [("1.0", third), ("10.0", 2 * third),
                                              ("+Inf", per_thread)]
