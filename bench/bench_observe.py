"""What the metrics and the traces cost: the server's CPU per event and per workflow, A/B.

    .venv/bin/python -m bench.bench_observe [--rounds 7] [--events 3000] [--workflows 300]
                                            [--warmup 200] [--quick]

Three `wkhost serve` on 127.0.0.1, serving the same classes, alive together:
- "metrics off": WKHOST_METRICS=off in its environment (host/metrics.py): the hot path's
  hooks unbound and a host call untimed, as if the metrics were not there;
- "default": as served, metrics on (they always are), traces off;
- "traces on": metrics on and `--otlp-endpoint` to a sink in this process (a thread on
  127.0.0.1 that takes OTLP/HTTP posts, keeps their bodies and answers 200; the spans
  are counted from those bodies once a workload's CPU has been read).
Each round runs every workload on each server in turn, the servers' order rotated from
one round to the next, so that all three share each stretch of this machine's time:
- a trivial event: GET /probe/<id>/now on one warm actor, one request at a time;
- a three-step workflow (examples/bench, as bench_workflows' throughput), one start
  request each, at concurrency 1 and 8.
The figure is the server process's CPU time (user + system, all its threads, from
/proc/PID/stat) from the workload's first request until a settle after its last answer,
per event or per workflow: the CPU the host spent, not the client's, whose own is in this
process. The settle (the same for the three) lets the traces' exporter send a workload's
last spans inside its window: its batch delay is set to 250 ms (OTEL_BSP_SCHEDULE_DELAY;
the SDK's default is 5 s), below the settle's 0.8 s; at these rates batches go out when
512 spans are queued anyway. An idle server burns some CPU too (its loops' ticks), in
every window alike: each server's idle rate is measured after the warm-up and printed.
Printed: each figure's median, min and max over the rounds; for metrics (default against
metrics off) and traces (traces on against default), the ratio of the medians, the
difference of the medians in CPU µs, and the median, min and max of each round's own
difference. Saved to bench/results/observe.json.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gzip
import math
import os
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from bench.bench_workflows import WF, _load, bench_wasm
from bench.common import (
    SMOKE_HELP,
    fmt_us,
    probe_wasm,
    process_cpu_s,
    save,
    smoke_results,
    summary,
)
from bench.httpload import Connection, drive
from bench.server import BenchServer

CONFIGS = ("metrics off", "default", "traces on")
PAIRS = (("metrics", "default", "metrics off"), ("traces", "traces on", "default"))
# The exporter's worker wakes every BATCH_DELAY_MS (and when 512 spans are queued): a
# workload's last spans are posted within that and their encoding's time of its end.
BATCH_DELAY_MS = 250
SETTLE_S = 0.8
IDLE_S = 3.0


# -- the traces' sink ------------------------------------------------------------------------

class Sink:
    """An OTLP/HTTP receiver on 127.0.0.1 that drops what it is sent, bar the bodies, kept
    (unparsed: that costs this process's CPU, beside the server measured) until `spans`."""

    def __init__(self) -> None:
        bodies: list[bytes] = []
        self._bodies = bodies

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # kept alive, as a collector's is

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                bodies.append(body)
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *_args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1/traces"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def spans(self) -> int:
        """The spans posted since the last call."""
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
        )

        count = 0
        while self._bodies:
            req = ExportTraceServiceRequest.FromString(self._bodies.pop())
            count += sum(len(s.spans) for r in req.resource_spans for s in r.scope_spans)
        return count

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


# -- the servers and their CPU ---------------------------------------------------------------

@contextlib.contextmanager
def environment(**values: str) -> Iterator[None]:
    """`values` in os.environ while a server is started (its process inherits them)."""
    kept = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in kept.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def start_servers(sink: Sink) -> dict[str, BenchServer]:
    actors = {"probe": probe_wasm(), WF: bench_wasm()}
    extra = ["--access", f"{WF}=internal"]
    servers: dict[str, BenchServer] = {}
    try:
        with environment(WKHOST_METRICS="off"):
            servers["metrics off"] = BenchServer(actors, extra)
        servers["default"] = BenchServer(actors, extra)
        with environment(OTEL_BSP_SCHEDULE_DELAY=str(BATCH_DELAY_MS)):
            servers["traces on"] = BenchServer(actors, [*extra, "--otlp-endpoint", sink.url])
    except BaseException:
        for server in servers.values():
            server.close()
        raise
    return servers


# -- the workloads ---------------------------------------------------------------------------

async def trivial_events(url: str, token: str, total: int, tag: str) -> dict[str, float]:
    async def one(conn: Connection, _i: int) -> bool:
        status, _ = await conn.request("GET", f"/probe/{tag}/now")
        return status == 200

    result = await drive(url, {"Authorization": f"Bearer {token}"}, 1, total, one)
    return {"failures": result.failures}


Workload = Callable[[BenchServer, str], dict[str, float]]


def workloads(events: int, workflows: int) -> dict[str, tuple[str, int, Workload]]:
    """name: (unit, count, run(server, tag))"""
    return {
        "trivial event (GET /now), concurrency 1": (
            "event", events,
            lambda s, tag: asyncio.run(trivial_events(s.url, s.token, events, "warm"))),
        "three-step workflow, concurrency 1": (
            "workflow", workflows,
            lambda s, tag: asyncio.run(_load(s.url, s.token, 1, workflows, tag))),
        "three-step workflow, concurrency 8": (
            "workflow", workflows,
            lambda s, tag: asyncio.run(_load(s.url, s.token, 8, workflows, tag))),
    }


def measure(server: BenchServer, sink: Sink, count: int, run: Workload, tag: str,
            settle_s: float = SETTLE_S) -> tuple[float, float]:
    """(CPU µs per unit, spans per unit) of one workload on `server`."""
    sink.spans()  # what an earlier window sent late is not this one's
    before = process_cpu_s(server.proc.pid)
    result = run(server, tag)
    time.sleep(settle_s)
    used = process_cpu_s(server.proc.pid) - before
    if result.get("failures"):
        raise RuntimeError(f"{int(result['failures'])} of {count} failed")
    return used / count * 1e6, sink.spans() / count


def warm_up(servers: dict[str, BenchServer], sink: Sink, count: int,
            idle_s: float = IDLE_S) -> dict[str, float]:
    """Past the live cap (96 actors) by default, as bench_workflows does, and the actor of
    the trivial event made and warm. Then each server's CPU while idle, in ms a second."""
    for name, server in servers.items():
        asyncio.run(_load(server.url, server.token, 8, count, f"warmup-{name}"))
        asyncio.run(trivial_events(server.url, server.token, count, "warm"))
    time.sleep(SETTLE_S)
    sink.spans()
    before = {name: process_cpu_s(server.proc.pid) for name, server in servers.items()}
    time.sleep(idle_s)
    return {name: (process_cpu_s(server.proc.pid) - before[name]) / idle_s * 1e3
            for name, server in servers.items()}


def run_rounds(rounds: int, events: int, workflows: int, warmup: int,
               settle_s: float = SETTLE_S, idle_s: float = IDLE_S) -> dict[str, Any]:
    loads = workloads(events, workflows)
    cpu: dict[str, dict[str, list[float]]] = {w: {c: [] for c in CONFIGS} for w in loads}
    spans: dict[str, list[float]] = {w: [] for w in loads}
    sink = Sink()
    servers = start_servers(sink)
    try:
        idle = warm_up(servers, sink, warmup, idle_s)
        for r in range(rounds):
            order = CONFIGS[r % 3:] + CONFIGS[:r % 3]
            print(f"  round {r + 1}/{rounds}: {', '.join(order)}", flush=True)
            for name in order:
                server = servers[name]
                for k, (w, (_unit, count, run)) in enumerate(loads.items()):
                    tag = f"r{r}-{k}-{name.replace(' ', '-')}"  # new workflows each time
                    per, sent = measure(server, sink, count, run, tag, settle_s)
                    cpu[w][name].append(per)
                    if name == "traces on":
                        spans[w].append(sent)
    finally:
        for server in servers.values():
            server.close()
        sink.close()
    return {"idle_cpu_ms_per_s": idle, "workloads": figures(loads, cpu, spans)}


# -- the figures -----------------------------------------------------------------------------

def figures(loads: dict[str, tuple[str, int, Workload]], cpu: dict[str, dict[str, list[float]]],
            spans: dict[str, list[float]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for w, (unit, count, _run) in loads.items():
        fig: dict[str, Any] = {"unit": unit, "count_per_round": count,
                               "cpu_us": {c: summary(cpu[w][c]) for c in CONFIGS},
                               "spans_per_unit": summary(spans[w])}
        for what, on, off in PAIRS:
            a, b = cpu[w][on], cpu[w][off]
            # A smoke run's few units can read no CPU at all (the kernel counts in ticks
            # of 10 ms): no ratio then, rather than a ZeroDivisionError.
            off_cpu = statistics.median(b)
            fig[what] = {"on": on, "off": off,
                         "ratio": statistics.median(a) / off_cpu if off_cpu else math.nan,
                         "difference_us": statistics.median(a) - statistics.median(b),
                         "round_differences_us": summary([x - y for x, y in zip(a, b,
                                                                                strict=True)])}
        out[w] = fig
    return out


def print_figures(out: dict[str, Any]) -> None:
    def cell(s: dict[str, float]) -> str:
        return f"{fmt_us(s['median'])} ({fmt_us(s['min'])}..{fmt_us(s['max'])})"

    print("\nserver CPU per event / per workflow: median (min..max) over the rounds")
    print("  idle, ms of CPU a second: " + ", ".join(
        f"{c} {v:.1f}" for c, v in out["idle_cpu_ms_per_s"].items()))
    for w, fig in out["workloads"].items():
        print(f"\n  {w}, per {fig['unit']} ({fig['count_per_round']} a round)")
        for c in CONFIGS:
            print(f"    {c:<12} {cell(fig['cpu_us'][c]):>34}")
        sp = fig["spans_per_unit"]
        print(f"    spans sent per {fig['unit']} (traces on): {sp['median']:.2f} "
              f"({sp['min']:.2f}..{sp['max']:.2f})")
        for what, _on, _off in PAIRS:
            d = fig[what]
            print(f"    {what + ' cost':<14} {d['on']}/{d['off']} {d['ratio']:.3f}x, "
                  f"{d['difference_us']:+.1f} µs; each round's difference "
                  f"{d['round_differences_us']['median']:+.1f} µs "
                  f"({d['round_differences_us']['min']:+.1f}..."
                  f"{d['round_differences_us']['max']:+.1f})")


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--events", type=int, default=3000)
    p.add_argument("--workflows", type=int, default=300)
    p.add_argument("--warmup", type=int, default=200, help="workflows and events first")
    p.add_argument("--quick", action="store_true", help="3 rounds, a quarter of each load")
    p.add_argument("--smoke", action="store_true", help=SMOKE_HELP + " (1 round of 10 "
                   "events and 4 workflows, 4 first, shorter settles and idle window)")
    args = p.parse_args(argv)
    if args.quick:
        args.rounds, args.events, args.workflows = 3, args.events // 4, args.workflows // 4
    pace = {}
    if args.smoke:
        smoke_results()
        args.rounds, args.events, args.workflows, args.warmup = 1, 10, 4, 4
        pace = {"settle_s": 0.3, "idle_s": 0.3}
    if min(args.rounds, args.events, args.workflows) < 1:
        p.error("--rounds, --events and --workflows must be at least 1")
    out = run_rounds(args.rounds, args.events, args.workflows, args.warmup, **pace)
    print_figures(out)
    saved = save("observe", {"rounds": args.rounds, "settle_s": pace.get("settle_s", SETTLE_S),
                             "batch_delay_ms": BATCH_DELAY_MS, **out})
    print(f"\n  saved {saved}")
    return out


if __name__ == "__main__":
    main()
