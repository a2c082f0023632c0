"""Calibrate FUEL_PER_MS: how much fuel guest Python burns per ms of CPU on this machine.

    .venv/bin/python -m bench.calibrate_fuel [--repeats 7]

A guest busy loop (`while True: pass`, the worst case for the interpreter) runs until the
fuel budget cuts it; the calling thread's CPU time over that call is the CPU the budget
bought. host/engine/components.py's FUEL_PER_MS is chosen from this figure.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import time
from typing import Any

from wkhost.config import HostConfig
from wkhost.core.host import Host
from wkhost.engine.components import FUEL_PER_MS
from wkhost.errors import BudgetExceeded
from wkhost.types import Request, Sender

from bench.common import COMPILED, SMOKE_HELP, probe_wasm, save, scratch_dir, smoke_results


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--budget-ms", type=int, default=200)
    p.add_argument("--smoke", action="store_true", help=SMOKE_HELP + " (--repeats 1)")
    args = p.parse_args(argv)
    if args.smoke:
        smoke_results()
        args.repeats = 1
    host = Host(HostConfig(data_dir=scratch_dir("wkbench-core-"), cache_dir=COMPILED,
                           cpu_budget_ms=args.budget_ms))
    host.add_class("probe", probe_wasm())
    host.start()
    ref = host.actor_ref("probe", "calibrate")
    host.request(ref, Request("GET", "/now"), Sender.operator())
    cpu_ms = []
    for _ in range(args.repeats):
        started = time.thread_time()
        with contextlib.suppress(BudgetExceeded):
            host.request(ref, Request("POST", "/spin"), Sender.operator())
        cpu_ms.append((time.thread_time() - started) * 1000)
    host.close()
    fuel = args.budget_ms * FUEL_PER_MS
    rates = sorted(fuel / ms for ms in cpu_ms)
    figures = {"fuel_budget": fuel, "cpu_ms_median": statistics.median(cpu_ms),
               "fuel_per_cpu_ms_median": statistics.median(rates),
               "fuel_per_cpu_ms_min": rates[0], "fuel_per_cpu_ms_max": rates[-1],
               "configured_FUEL_PER_MS": FUEL_PER_MS}
    print(f"\nfuel calibration: a {args.budget_ms} ms budget = {fuel / 1e9:.2f} G fuel "
          f"bought {statistics.median(cpu_ms):.1f} ms of CPU (median of {args.repeats})")
    print(f"  busy-loop guest burns {statistics.median(rates) / 1e6:.1f} M fuel per CPU ms "
          f"(min {rates[0] / 1e6:.1f}, max {rates[-1] / 1e6:.1f}); "
          f"configured FUEL_PER_MS = {FUEL_PER_MS / 1e6:.1f} M")
    print(f"  saved {save('fuel', figures)}")
    return figures


if __name__ == "__main__":
    main()
