"""`make chaos`: random kill -9s and pauses over a 3-node cluster, with workflows and
exec-durable writes running all along. Outside `make test`: it takes minutes.

    python -m tests.cluster.chaos [--faults 100] [--orders 30] [--seed N]

It starts its own PostgreSQL (host/testing/postgres.py) and three nodes on 127.0.0.1,
then, `--faults` times, picks a node and either kills it (kill -9) and starts it again,
or pauses it (SIGSTOP) past its lease TTL and resumes it. At the end it reports:
- the acknowledged writes lost (must be 0);
- the workflows stuck, not completed within a bound after the last fault (must be 0);
- the duplicates of recorded steps: orders charged twice by the ledger (must be 0);
- the longest time an actor went without an acknowledged write, against 2x the TTL.
The exit status is 1 if any of the first three is not 0.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from wkhost.engine.build import cached_build
from wkhost.testing.postgres import PgServer

from tests.e2e.reliability_support import SHOP_ACCESS, SHOP_SOURCES

from .load import Writers, call, order_state, start_orders
from .nodes import TTL_S, Cluster

REPO = Path(__file__).resolve().parents[2]


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    rng = random.Random(args.seed)
    wasm = {name: cached_build(REPO / src, REPO / ".cache" / "components")
            for name, src in SHOP_SOURCES.items()}
    with tempfile.TemporaryDirectory(prefix="wk-chaos-") as tmp, \
            PgServer.start(Path(tmp) / "pg") as pg:
        cluster = Cluster(Path(tmp), pg.url, wasm, access=SHOP_ACCESS)
        try:
            return _run(cluster.start(), args, rng)
        finally:
            cluster.close()


def _run(cluster: Cluster, args: argparse.Namespace, rng: random.Random) -> int:
    orders = [f"c{i}" for i in range(args.orders)]
    writers = Writers(cluster, [f"k{i}" for i in range(12)]).start()
    started = time.monotonic()
    for n in range(args.faults):
        if n < len(orders):
            start_orders(cluster, orders[n:n + 1])
        _fault(cluster, rng, n)
    start_orders(cluster, orders[args.faults:])
    writers.stop()
    lost = writers.lost()
    stuck = _stuck(cluster, orders, timeout=max(120.0, 20 * TTL_S))
    dupes = _charged_twice(cluster)
    report = {
        "faults": args.faults, "seconds": round(time.monotonic() - started, 1),
        "acknowledged_writes": writers.count(), "failed_attempts": writers.failed,
        "acknowledged_writes_lost": sum(map(len, lost.values())),
        "workflows": len(orders), "workflows_stuck": len(stuck),
        "steps_recorded_twice": len(dupes),
        "longest_unavailable_s": round(writers.longest_gap_s, 2),
        "two_ttl_s": 2 * TTL_S,
    }
    print(json.dumps(report, indent=2))
    if lost or stuck or dupes:
        print(f"lost: {lost}\nstuck: {stuck}\ncharged twice: {dupes}", file=sys.stderr)
        return 1
    return 0


def _fault(cluster: Cluster, rng: random.Random, n: int) -> None:
    i = rng.randrange(len(cluster.nodes))
    if rng.random() < 0.5:
        print(f"[{n + 1}] kill -9 {cluster.node(i).name}", flush=True)
        cluster.kill9(i)
        time.sleep(rng.uniform(0.2, 1.0))
        cluster.restart(i)
    else:
        print(f"[{n + 1}] pause {cluster.node(i).name}", flush=True)
        cluster.pause(i)
        time.sleep(TTL_S * rng.uniform(1.2, 2.0))
        cluster.resume(i)
    time.sleep(rng.uniform(0.2, 1.0))


def _stuck(cluster: Cluster, orders: list[str], timeout: float) -> list[str]:
    end = time.monotonic() + timeout
    left = list(orders)
    while left and time.monotonic() < end:
        left = [o for o in left if order_state(cluster, o) != "completed"]
        time.sleep(0.5)
    return left


def _charged_twice(cluster: Cluster) -> list[str]:
    status, doc = call(cluster.any_up().url, "GET", "/ledger/main/charges",
                       token=cluster.token)
    if status != 200:
        raise SystemExit(f"the ledger did not answer: {status} {doc}")
    counts = Counter(order for _, order, _ in doc["charges"])
    return sorted(o for o, n in counts.items() if n > 1)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="make chaos", description=__doc__.split("\n\n")[0])
    p.add_argument("--faults", type=int, default=100, help="kill -9s and pauses (default 100)")
    p.add_argument("--orders", type=int, default=30, help="workflows started (default 30)")
    p.add_argument("--seed", type=int, default=None, help="for a run that can be repeated")
    return p


if __name__ == "__main__":
    sys.exit(main())
