"""Compiling a server's classes one after another, or each on a thread of its own
(issue 23, item 11): does the second help, when wasmtime already compiles one component
on several threads?

    .venv/bin/python -m bench.compile_classes [--runs 5] [WASM ...]

Each run compiles every component into an empty cache directory (cold, as a new data
directory was before the cache was shared), in a process of its own so that its peak
memory is its own, the two ways taking turns so that both see the same stretch of the
machine's time. Prints the median wall time of each way, the CPU time it took and its
peak resident memory. Without WASM: the orders, ledger and probe guests, built (cached).
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from wasmtime import Engine
from wkhost.engine.build import cached_build
from wkhost.engine.components import load_component, make_engine

REPO = Path(__file__).resolve().parent.parent
GUESTS = ("examples/workflows/orders/app.py", "examples/workflows/ledger/app.py",
          "tests/guests/probe.py")

Compile = Callable[[Engine, list[Path], Path], None]


def one_by_one(engine: Engine, wasms: list[Path], cache: Path) -> None:
    for wasm in wasms:
        load_component(engine, wasm, cache)


def on_threads(engine: Engine, wasms: list[Path], cache: Path) -> None:
    with ThreadPoolExecutor(len(wasms)) as pool:
        list(pool.map(lambda w: load_component(engine, w, cache), wasms))


def timed(way: Compile, wasms: list[Path]) -> dict[str, float]:
    """Wall s, process CPU s and peak resident MB of compiling `wasms` into an empty
    cache, in this process."""
    engine = make_engine(None)
    with tempfile.TemporaryDirectory(prefix="wk-compile-bench-") as cache:
        wall, cpu = time.perf_counter(), time.process_time()
        way(engine, wasms, Path(cache))
        return {"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu,
                "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def run_apart(way: str, wasms: list[Path]) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-m", "bench.compile_classes", "--one", way,
                          *map(str, wasms)], capture_output=True, text=True, check=True,
                         cwd=REPO)
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


WAYS: dict[str, Compile] = {"one by one": one_by_one, "on threads": on_threads}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--one", choices=WAYS, help=argparse.SUPPRESS)  # one run, in here
    ap.add_argument("wasm", nargs="*", type=Path)
    args = ap.parse_args()
    wasms = args.wasm or [cached_build(REPO / g, REPO / ".cache" / "components")
                          for g in GUESTS]
    if args.one:
        print(json.dumps(timed(WAYS[args.one], wasms)))
        return
    results: dict[str, list[dict[str, float]]] = {name: [] for name in WAYS}
    for run in range(args.runs):
        for name in WAYS:
            r = run_apart(name, wasms)
            results[name].append(r)
            print(f"run {run + 1} {name}: {r['wall']:.2f} s wall, {r['cpu']:.2f} s CPU, "
                  f"{r['rss_mb']:.0f} MB peak", flush=True)
    print(f"{len(wasms)} components, {args.runs} runs, medians:")
    for name, runs in results.items():
        walls = [r["wall"] for r in runs]
        print(f"  {name}: {statistics.median(walls):.2f} s wall (range {min(walls):.2f}-"
              f"{max(walls):.2f}), {statistics.median(r['cpu'] for r in runs):.2f} s CPU, "
              f"{statistics.median(r['rss_mb'] for r in runs):.0f} MB peak")


if __name__ == "__main__":
    main()
