"""The front door under load: requests/s and latency at several concurrency levels.

    .venv/bin/python -m bench.bench_frontdoor [--requests 2000] [--repeats 3]

A real `wkhost serve` on 127.0.0.1 and an aiohttp client in this process, with keep-alive
connections, a bounded number of requests, and N of them in flight at once. Workloads:
- trivial: GET /probe/<id>/now (one event, no storage), ids spread over 64 actors;
- durable write: POST /probe/<id>/sql with one exec-durable INSERT (one fsync per request);
- actor call: POST /probe/<id>/call to another actor's /now (two events, one call).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from typing import Any

import aiohttp

from bench.common import probe_wasm, save
from bench.server import BenchServer

LEVELS = (1, 8, 32)


async def run_load(url_of: Any, method: str, body: bytes, requests: int, concurrency: int,
                   headers: dict[str, str]) -> dict[str, float]:
    latencies: list[float] = []
    counter = iter(range(requests))
    failures = 0
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector, headers=headers) as session:

        async def worker() -> None:
            nonlocal failures
            for i in counter:
                started = time.perf_counter()
                async with session.request(method, url_of(i), data=body) as resp:
                    await resp.read()
                    if resp.status != 200:
                        failures += 1
                latencies.append(time.perf_counter() - started)

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        elapsed = time.perf_counter() - started
    latencies.sort()
    return {"rps": requests / elapsed, "p50_ms": latencies[len(latencies) // 2] * 1000,
            "p99_ms": latencies[int(len(latencies) * 0.99)] * 1000, "failures": failures}


def median_of(runs: list[dict[str, float]]) -> dict[str, float]:
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--requests", type=int, default=2000)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args(argv)
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
            asyncio.run(run_load(url_of, method, body, 200, 8, headers))  # warm instances
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
