"""The same benchmarks from two trees, run alternately: a before/after comparison that
shares one stretch of this noisy machine's time.

    .venv/bin/python -m bench.interleave BEFORE_TREE AFTER_TREE [--rounds 3]

Each tree is a checkout with its own `.venv` (made by `make` there). Each round runs, in
each tree in turn (the order alternates between rounds), `bench.bench_core` (a trivial
event) and `bench.bench_workflows --part replay --part throughput`, and reads the figures
each run saved under that tree's bench/results/. It prints, per figure, the median over
the rounds of each run's median, the min and max of those, and after/before.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

FIGURES: dict[str, tuple[str, Callable[[dict[str, Any]], float]]] = {
    "trivial event (GET /now), us": (
        "core", lambda f: f["trivial event (GET /now)"]["median"]),
    "replay at 5,000 positions (warm), us/position": (
        "workflows", lambda f: f["replay"]["warm n=5000"]["event_us_per_pos"]["median"]),
    "replay at 5,000 positions (fresh), us/position": (
        "workflows", lambda f: f["replay"]["fresh n=5000"]["event_us_per_pos"]["median"]),
    "three-step workflows/s, concurrency 1": (
        "workflows", lambda f: f["throughput"]["1"]["wf_per_s"]["median"]),
    "three-step workflows/s, concurrency 32": (
        "workflows", lambda f: f["throughput"]["32"]["wf_per_s"]["median"]),
    "three-step p50 latency at concurrency 1, ms": (
        "workflows", lambda f: f["throughput"]["1"]["p50_ms"]),
}
RUNS = {
    "core": ["-m", "bench.bench_core", "--repeats", "5"],
    "workflows": ["-m", "bench.bench_workflows", "--part", "replay", "--part", "throughput",
                  "--repeats", "5", "--out", "workflows-interleave"],
}
SAVED = {"core": "core.json", "workflows": "workflows-interleave.json"}


def run_once(tree: Path) -> dict[str, float]:
    figures: dict[str, dict[str, Any]] = {}
    for name, args in RUNS.items():
        saved = tree / "bench" / "results" / SAVED[name]
        # bench_core saves where `make bench` does: its figures there are put back after.
        kept = saved.read_bytes() if saved.exists() else None
        try:
            subprocess.run([str(tree / ".venv" / "bin" / "python"), *args], cwd=tree,
                           check=True, stdout=subprocess.DEVNULL)
            figures[name] = json.loads(saved.read_text())["figures"]
        finally:
            if kept is None:
                saved.unlink(missing_ok=True)
            else:
                saved.write_bytes(kept)
    return {label: pick(figures[source]) for label, (source, pick) in FIGURES.items()}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("before", type=Path)
    p.add_argument("after", type=Path)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args(argv)
    trees = {"before": args.before.resolve(), "after": args.after.resolve()}
    seen: dict[str, dict[str, list[float]]] = {t: {k: [] for k in FIGURES} for t in trees}
    for n in range(args.rounds):
        order = list(trees) if n % 2 == 0 else list(reversed(trees))
        for which in order:
            print(f"round {n + 1}/{args.rounds}: {which} ({trees[which]})", flush=True)
            for label, value in run_once(trees[which]).items():
                seen[which][label].append(value)
    print(f"\n{'figure':<50} {'before':>22} {'after':>22} {'after/before':>12}")
    for label in FIGURES:
        b, a = seen["before"][label], seen["after"][label]
        cells = [f"{statistics.median(v):.1f} [{min(v):.1f}-{max(v):.1f}]" for v in (b, a)]
        print(f"{label:<50} {cells[0]:>22} {cells[1]:>22} "
              f"{statistics.median(a) / statistics.median(b):>12.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
