"""What the metrics add to a host call and to an event (host/metrics.py), micro-benchmarked.

    .venv/bin/python -m bench.bench_metrics_cost [--calls 200000] [--repeats 9] [--smoke]

- host call: interfaces/linker.py's `guard` (its two clock reads and one histogram
  observation) around a host function that does nothing, against the same wrapper
  without them (the guard as it was before the metrics), in interleaved repeats; the
  figure is the median difference per call. A real host call (a SQL statement, an actor
  call) costs tens of µs to ms, so this is the whole of what the metrics add to it.
- event: `metrics.event_ended` (a counter's child looked up and bumped, two histogram
  observations), which every event runs once.
- traces on (host/tracing.py, as --otlp-endpoint makes them, with an exporter that drops
  what it is given): what a host call's span adds over the guard with metrics alone.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

from wkhost import metrics, tracing
from wkhost.interfaces.linker import guard


def bare_guard(fn: Callable[..., Any]) -> Callable[..., Any]:
    def guarded(store: Any, *args: Any) -> Any:
        try:
            return fn(store, *args)
        except Exception as e:
            raise RuntimeError(str(e)) from None
    return guarded


def nothing(_store: Any, x: int) -> int:
    return x


def per_call_ns(fn: Callable[..., Any], calls: int) -> float:
    started = time.perf_counter_ns()
    for i in range(calls):
        fn(None, i)
    return (time.perf_counter_ns() - started) / calls


def per_event_ns(calls: int) -> float:
    started = time.perf_counter_ns()
    for _ in range(calls):
        metrics.event_ended("bench", "request", metrics.OK, 0.0004, 2_000_000)
    return (time.perf_counter_ns() - started) / calls


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--calls", type=int, default=200_000)
    p.add_argument("--repeats", type=int, default=9)
    p.add_argument("--smoke", action="store_true",
                   help="a smoke run (make test): --calls 1000 --repeats 1")
    args = p.parse_args(argv)
    if args.smoke:
        args.calls, args.repeats = 1000, 1
    measured, bare = guard(nothing, "bench"), bare_guard(nothing)
    added, base, events = [], [], []
    for _ in range(args.repeats):
        b = per_call_ns(bare, args.calls)
        m = per_call_ns(measured, args.calls)
        base.append(b)
        added.append(m - b)
        events.append(per_event_ns(args.calls // 4))
    print(f"host call, bare guard:      {statistics.median(base):7.0f} ns")
    print(f"host call, metrics added:   {statistics.median(added):7.0f} ns "
          f"(min {min(added):.0f}, max {max(added):.0f})")
    print(f"event, metrics.event_ended: {statistics.median(events):7.0f} ns")
    print(f"host call, span added:      {statistics.median(span_cost(args)):7.0f} ns")


def span_cost(args: argparse.Namespace) -> list[float]:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    class Dropped(SpanExporter):
        def export(self, spans: Any) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(Dropped()))
    untraced = guard(nothing, "bench")
    tracing.install(provider)
    try:
        traced = guard(nothing, "bench")
        calls = args.calls // 10
        return [per_call_ns(traced, calls) - per_call_ns(untraced, calls)
                for _ in range(args.repeats)]
    finally:
        tracing.shutdown()


if __name__ == "__main__":
    main()
