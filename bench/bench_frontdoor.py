"""The front door under load: requests/s and latency at several concurrency levels.

    .venv/bin/python -m bench.bench_frontdoor [--requests 2000] [--repeats 3]

A real `wkhost serve` on 127.0.0.1 and the benchmarks' lean client (bench/httpload.py) in
this process, with keep-alive connections, a bounded number of requests, and N of them
in flight at once. Workloads:
- trivial: GET /probe/<id>/now (one event, no storage), ids spread over 64 actors;
- durable write: POST /probe/<id>/sql with one exec-durable INSERT (one fsync per request);
- actor call: POST /probe/<id>/call to another actor's /now (two events, one call).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
from typing import Any

from bench.common import SMOKE_HELP, probe_wasm, save, smoke_results
from bench.httpload import Connection, drive
from bench.server import BenchServer

LEVELS = (1, 8, 32)


async def run_load(url_of: Any, method: str, body: bytes, requests: int, concurrency: int,
                   headers: dict[str, str]) -> dict[str, float]:
    """`requests` requests, `concurrency` at a time; `url_of(i)` is the i-th one's URL
    (every one on the same server)."""
    base = url_of(0).split("/", 3)
    origin = "/".join(base[:3])

    async def one(conn: Connection, i: int) -> bool:
        status, _ = await conn.request(method, url_of(i)[len(origin):], body)
        return status == 200

    result = await drive(origin, headers, concurrency, requests, one)
    figures = result.figures(requests)
    return {"rps": figures["wf_per_s"], "p50_ms": figures["p50_ms"],
            "p99_ms": figures["p99_ms"], "failures": figures["failures"]}


def median_of(runs: list[dict[str, float]]) -> dict[str, float]:
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--requests", type=int, default=2000)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--warmup", type=int, default=200, help="requests first, each workload")
    p.add_argument("--smoke", action="store_true",
                   help=SMOKE_HELP + " (--requests 16 --repeats 1 --warmup 16)")
    args = p.parse_args(argv)
    if args.smoke:
        smoke_results()
        args.requests, args.repeats, args.warmup = 16, 1, 16
    server = BenchServer({"probe": probe_wasm()})
    headers = {"Authorization": f"Bearer {server.token}"}
    base = server.url
    insert = json.dumps({"sql": "INSERT INTO log VALUES ('bench', 0)", "params": [],
                         "durable": True}).encode()
    call = json.dumps({"cls": "probe", "id": "callee", "path": "/now"}).encode()
    workloads = {
        "trivial": ("GET", lambda i: f"{base}/probe/a{i % 64}/now", b""),
        "durable write": ("POST", lambda i: f"{base}/probe/w{i % 64}/sql", insert),
        "actor call": ("POST", lambda i: f"{base}/probe/c{i % 64}/call", call),
    }
    figures: dict[str, Any] = {}
    try:
        for name, (method, url_of, body) in workloads.items():
            asyncio.run(run_load(url_of, method, body, args.warmup, 8, headers))  # warm them
            for level in LEVELS:
                runs = [asyncio.run(run_load(url_of, method, body, args.requests, level,
                                             headers)) for _ in range(args.repeats)]
                figures[f"{name} c={level}"] = median_of(runs)
    finally:
        server.close()
    print(f"\nfront door (medians of {args.repeats} runs of {args.requests} requests)")
    print(f"  {'workload':<24} {'req/s':>9} {'p50':>9} {'p99':>9}")
    for name, f in figures.items():
        print(f"  {name:<24} {f['rps']:>9.0f} {f['p50_ms']:>7.2f}ms {f['p99_ms']:>7.2f}ms"
              + (f"  ({f['failures']:.0f} failed)" if f["failures"] else ""))
    print(f"  saved {save('frontdoor', figures)}")
    return figures


if __name__ == "__main__":
    main()
