"""DBOS Transact on SQLite: the same workflow workloads as bench_workflows, in-process.

    .cache/peers-venv/bin/python bench/peers/dbos_peer.py [--repeats 5] [--workflows 200]

Run by `bench.peers` with the peers' venv (never the product's). DBOS runs as shipped on
SQLite (its system database in a fresh temp dir, SQLite's defaults: rollback journal,
synchronous=FULL). Workloads, each a median (min, max) over repeats:
- step: a workflow of N steps (N = 10 and 50), each step returning a small dict, timed
  from the call to its result; the figure is the slope per step between N=10 and N=50;
- throughput: three-step workflows started concurrently (start_workflow, then
  get_result), C client threads each doing that in a loop, C in 1, 8, 32.
Prints a JSON document on its last stdout line.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from typing import Any

from dbos import DBOS


def summary(xs: list[float]) -> dict[str, Any]:
    # "runs" too: python -m bench pools two runs of a peer (bench.peers.merge)
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs), "n": len(xs),
            "runs": list(xs)}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--workflows", type=int, default=200)
    p.add_argument("--levels", default="1,8,32")
    args = p.parse_args()
    data = tempfile.mkdtemp(prefix="dbos-bench-")
    logging.getLogger("dbos").setLevel(logging.WARNING)
    DBOS(config={"name": "wkbench", "system_database_url": f"sqlite:///{data}/dbos.sqlite",
                 "log_level": "WARNING", "run_admin_server": False})  # type: ignore[typeddict-unknown-key]

    @DBOS.step()
    def step(i: int) -> dict[str, Any]:
        return {"order": f"ord-{i:06d}", "status": "charged", "n": i}

    @DBOS.workflow()
    def steps(n: int) -> dict[str, Any]:
        for i in range(n):
            step(i)
        return {"steps": n}

    DBOS.launch()
    try:
        steps(3)  # warm up: migrations done, code paths hot
        per_n: dict[int, list[float]] = {}
        for n in (10, 50):
            per_n[n] = []
            for _ in range(args.repeats):
                t0 = time.perf_counter()
                out = steps(n)
                per_n[n].append((time.perf_counter() - t0) * 1e6)
                assert out == {"steps": n}
        slopes = [(b - a) / 40 for a, b in zip(per_n[10], per_n[50], strict=True)]
        figures: dict[str, Any] = {
            "step_us": summary(slopes),
            "workflow_10_us": summary(per_n[10]),
            "workflow_50_us": summary(per_n[50]),
            "throughput": {},
        }
        for level in (int(x) for x in args.levels.split(",")):
            runs = []
            for _ in range(max(1, args.repeats // 2 + 1)):
                runs.append(throughput(steps, level, args.workflows))
            figures["throughput"][str(level)] = {
                "wf_per_s": summary([r["wf_per_s"] for r in runs]),
                "p50_ms": statistics.median(r["p50_ms"] for r in runs),
                "failures": sum(r["failures"] for r in runs),
            }
        figures["version"] = _version()
        figures["storage"] = "SQLite (DBOS defaults), system database in a temp dir"
    finally:
        DBOS.destroy()
        shutil.rmtree(data, ignore_errors=True)
    print(json.dumps(figures))


def throughput(steps: Any, level: int, total: int) -> dict[str, float]:
    counter = iter(range(total))
    lock = threading.Lock()
    lat: list[float] = []
    failures = 0

    def worker() -> None:
        nonlocal failures
        while True:
            with lock:
                i = next(counter, None)
            if i is None:
                return
            t0 = time.perf_counter()
            try:
                h = DBOS.start_workflow(steps, 3)
                ok = h.get_result() == {"steps": 3}
            except Exception:
                ok = False
            with lock:
                lat.append(time.perf_counter() - t0)
                failures += 0 if ok else 1

    threads = [threading.Thread(target=worker) for _ in range(level)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    lat.sort()
    return {"wf_per_s": total / elapsed, "p50_ms": lat[len(lat) // 2] * 1000,
            "failures": failures}


def _version() -> str:
    from importlib.metadata import version

    return f"dbos {version('dbos')}, Python {sys.version.split()[0]}, pid {os.getpid()}"


if __name__ == "__main__":
    main()
