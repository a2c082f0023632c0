"""An update's round trip beside a start's: how long a caller waits for a workflow to
apply a message and answer it, against starting one.

    .venv/bin/python -m bench.bench_updates [--runs 25] [--peer-runs 15] [--quick]
                                            [--part serve|peers]

serve: through a real `wkhost serve` (the guest is examples/workflows/cart/app.py, a cart),
each timed from the request to the answer, with the answer held (`wait_ms`) until done:
- "start: one step": a start of a new instance whose workflow is one step, answered
  completed (an operator's start that waits runs the first run in its own event);
- "update: one step": an update to one waiting cart whose handler prices the item with
  a step, answered completed (the acceptance's event, the run that takes it, the answer
  delivered again after that run);
- "update-with-start: one step": a start of a new cart that carries that update.
peers: each installed peer's nearest equivalent (bench/peers/*_groups.py --updates),
in this same run: DBOS, a message to a running workflow (send, recv, a step, set_event,
get_event); Restate, a call of a virtual object's handler with one step.
Every figure is a median with min and max over `runs`, the workloads taking turns within
each round; the ratios compare figures of this run. Saved to bench/results/updates.json.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from typing import Any

from bench.bench_groups import Client, run_peer
from bench.common import REPO, SMOKE_HELP, fmt_us, remove_scratch, save, smoke_results, summary

CLS = "carts"
GUEST = REPO / "examples" / "workflows" / "cart" / "app.py"
PARTS = ("serve", "peers")
HOLD_MS = 60_000
START, UPDATE, WITH_START = ("start: one step", "update: one step",
                             "update-with-start: one step")


def _timed(call: Callable[[], dict[str, Any]], ok: Callable[[dict[str, Any]], bool]) -> float:
    t0 = time.perf_counter()
    got = call()
    us = (time.perf_counter() - t0) * 1e6
    if not ok(got):
        raise RuntimeError(f"unexpected answer: {got!r}"[:300])
    return us


def bench_serve(runs: int) -> dict[str, Any]:
    from wkhost.engine.build import cached_build

    from bench.server import BenchServer

    wasm = cached_build(GUEST, REPO / ".cache" / "components",
                        progress=lambda line: print(f"  [build] {line}", flush=True))
    server = BenchServer({CLS: wasm}, [])
    client = Client(server.url, server.token, cls=CLS)
    base = f"/{CLS}/{{}}/wk-workflow/v1/"

    def done(doc: dict[str, Any]) -> bool:
        u = doc.get("update")
        return (u or doc).get("state") == "completed"

    kinds: dict[str, Callable[[int], dict[str, Any]]] = {
        START: lambda r: client.post(base.format(f"s-{r}") + "start",
                                     {"input": "one step", "wait_ms": HOLD_MS}),
        UPDATE: lambda r: client.post(base.format("cart") + "update", {
            "name": "add", "arg": f"sku-{r}", "id": f"u-{r}", "wait_ms": HOLD_MS}),
        WITH_START: lambda r: client.post(base.format(f"w-{r}") + "start", {
            "update": {"name": "add", "arg": "book", "id": f"w-{r}"}, "wait_ms": HOLD_MS}),
    }
    samples: dict[str, list[float]] = {name: [] for name in kinds}
    try:
        client.post(base.format("cart") + "start", {"input": None})
        for r in range(runs + 2):  # two warm-up rounds
            for name, call in kinds.items():
                us = _timed(lambda call=call, r=r: call(r), done)  # type: ignore[misc]
                if r >= 2:
                    samples[name].append(us)
    finally:
        client.close()
        server.close()
    return {name: summary(s) for name, s in samples.items()}


def bench_peers(runs: int) -> dict[str, Any]:
    from bench.peers import each_available

    return each_available("updates", lambda name: run_peer(
        name, ["--runs", str(runs), "--updates"]))


def print_table(figs: dict[str, Any]) -> None:
    mine = figs.get("serve", {})
    peers = {k: v for k, v in figs.get("peers", {}).items() if "skipped" not in v}
    head = f"  {'round trip, answered when done':<34} {'median':>9} {'min':>9} {'max':>9}"
    head += f" {'/start':>7}"
    for p in peers:
        head += f" {p:>9} {'ratio':>6}"
    print(f"\n{head}")
    start = mine.get(START, {}).get("median")
    for name, s in mine.items():
        line = (f"  {name:<34} {fmt_us(s['median']):>9} {fmt_us(s['min']):>9} "
                f"{fmt_us(s['max']):>9} {s['median'] / start if start else 0:>6.2f}x")
        for f in peers.values():
            t = (f.get(UPDATE if name == WITH_START else name) or {}).get("median")
            line += f" {fmt_us(t):>9} {s['median'] / t:>5.2f}x" if t else f" {'-':>9} {'-':>6}"
        print(line)
    print("  (update-with-start beside each peer's update: none has the one request)")
    for p, f in figs.get("peers", {}).items():
        print(f"  {p}: {f.get('skipped') or f.get('version', '')}")


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=25, help="timed runs of each workload (25)")
    p.add_argument("--peer-runs", type=int, default=15, help="timed runs on each peer (15)")
    p.add_argument("--quick", action="store_true", help="--runs 9 --peer-runs 5")
    p.add_argument("--part", action="append", choices=PARTS,
                   help="run only this part (repeatable); default: all")
    p.add_argument("--smoke", action="store_true", help=SMOKE_HELP + " (--runs 1 "
                   "--peer-runs 1)")
    args = p.parse_args(argv)
    if args.quick:
        args.runs, args.peer_runs = 9, 5
    if args.smoke:
        smoke_results()
        args.runs, args.peer_runs = 1, 1
    if args.runs < 1 or args.peer_runs < 1:
        p.error("--runs and --peer-runs take 1 or more")
    os.environ.setdefault("PYTHONHASHSEED", "0")
    figs: dict[str, Any] = {"runs": args.runs, "peer_runs": args.peer_runs}
    for part in args.part or PARTS:
        started = time.monotonic()
        print(f"  [updates] {part} ...", flush=True)
        figs[part] = bench_serve(args.runs) if part == "serve" else bench_peers(args.peer_runs)
        remove_scratch()
        print(f"  [updates] {part} done in {time.monotonic() - started:.1f} s", flush=True)
    print_table(figs)
    print(f"  saved {save('updates', figs)}")
    return figs


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
