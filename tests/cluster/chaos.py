"""`make chaos`: random kill -9s and pauses over a 3-node cluster, with workflows and
exec-durable writes running all along. Outside `make test`: it takes minutes.

    python -m tests.cluster.chaos [--faults 100] [--orders 30] [--seed N]

It starts its own PostgreSQL (host/testing/postgres.py) and three nodes on 127.0.0.1,
then, `--faults` times, picks a node and either kills it (kill -9) and starts it again,
or pauses it (SIGSTOP) past its lease TTL and resumes it. At the end it reports:
- the acknowledged writes lost (must be 0);
- the workflows stuck, not completed within a bound after the last fault (must be 0);
- the duplicates of recorded steps: orders charged twice by the ledger (must be 0);
- for each kind of fault, the longest a client waited for an acknowledged write (from
  its first attempt, retries included) while that fault was in force (`longest_by_kind`),
  against that kind's bound in docs/cluster.md with the passing node's view refresh,
  plus `--slack` for a request's own time: a kill -9 or a pause, TTL + 2 renewals from
  the fault; after the node is back (restarted or resumed) and takes its shards back by
  hand-over, 2 renewals (`bounds_s`).
The exit status is 1 if any of the first three is not 0, or any wait passed its bound.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from bisect import bisect_right
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from wkhost.engine.build import cached_build
from wkhost.testing.postgres import PgServer

from tests.e2e.reliability_support import SHOP_ACCESS, SHOP_SOURCES

from .load import Wait, Writers, call, order_state, start_orders
from .nodes import RENEW_S, TTL_S, Cluster

REPO = Path(__file__).resolve().parents[2]

KILL, PAUSE, HAND_BACK = "kill -9", "pause", "hand-back"
Phase = tuple[float, str]  # from when (monotonic), the kind of fault in force


def bounds_s(ttl_s: float, renew_s: float, slack_s: float) -> dict[str, float]:
    """Each kind's bound on a client's wait for a write it began while that kind was
    in force (docs/cluster.md, "Failure modes"): the shard's lease expires, another node
    takes it at its next round, and the node the client asked learns it at its own next
    round; after a hand-over, the taker's next round and the passing node's. Plus
    `slack_s`, the request's own time."""
    lapse = ttl_s + 2 * renew_s + slack_s
    return {KILL: lapse, PAUSE: lapse, HAND_BACK: 2 * renew_s + slack_s}


def longest_by_kind(waits: Sequence[Wait], phases: Sequence[Phase],
                    bounds: dict[str, float]) -> dict[str, Wait]:
    """The longest wait of each kind (`phases` in order of time), each as counted: from
    its start under the phase in force then (before the first phase: the steady state,
    bound as a HAND_BACK), or from the start of a kill -9 or pause that came while it
    lasted, whichever is furthest within its bound (one begun during a hand-back and
    caught by the next pause is the pause's, from the pause). A hand-back that comes
    while a wait lasts is the tail of the fault in force, and counts from that fault."""
    starts = [at for at, _ in phases]
    longest: dict[str, Wait] = {}
    for wait in waits:
        first = bisect_right(starts, wait.since) - 1
        last = bisect_right(starts, wait.until) - 1
        ways = [(phases[first][1] if first >= 0 else HAND_BACK, wait)]
        ways += [(kind, Wait(wait.actor, at, wait.until, wait.failures))
                 for at, kind in phases[first + 1:last + 1] if kind != HAND_BACK]
        kind, counted = min(ways, key=lambda way: way[1].seconds - bounds[way[0]])
        if kind not in longest or counted.seconds > longest[kind].seconds:
            longest[kind] = counted
    return longest


def over_bounds(longest: dict[str, Wait], bounds: dict[str, float]) -> dict[str, Wait]:
    """The kinds whose longest wait passed their bound."""
    return {kind: w for kind, w in longest.items() if w.seconds > bounds[kind]}


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
    phases: list[Phase] = []
    for n in range(args.faults):
        if n < len(orders):
            start_orders(cluster, orders[n:n + 1])
        _fault(cluster, rng, n, phases, started)
    start_orders(cluster, orders[args.faults:])
    writers.stop()
    lost = writers.lost()
    stuck = _stuck(cluster, orders, timeout=max(120.0, 20 * TTL_S))
    dupes = _charged_twice(cluster)
    bounds = bounds_s(TTL_S, RENEW_S, args.slack)
    longest = longest_by_kind(writers.waits, phases, bounds)
    over = over_bounds(longest, bounds)
    report = {
        "faults": args.faults, "seconds": round(time.monotonic() - started, 1),
        "acknowledged_writes": writers.count(), "failed_attempts": writers.failed,
        "acknowledged_writes_lost": sum(map(len, lost.values())),
        "workflows": len(orders), "workflows_stuck": len(stuck),
        "steps_recorded_twice": len(dupes),
        "longest_wait_s": round(writers.longest_gap_s, 2),
        "longest_wait_s_by_fault": {
            kind: {"longest_s": round(longest[kind].seconds, 2) if kind in longest else 0,
                   "bound_s": round(bound, 2),
                   "faults": sum(1 for _, k in phases if k == kind)}
            for kind, bound in bounds.items()},
        "waits_over_bound": len(over),
    }
    print(json.dumps(report, indent=2))
    for kind, w in over.items():
        print(f"{kind}: a write to {w.actor} waited {w.seconds:.2f} s from "
              f"{w.since - started:.1f} s in, over its bound of {bounds[kind]:.2f} s; "
              f"its attempts before: {list(w.failures)}", file=sys.stderr)
    if lost or stuck or dupes:
        print(f"lost: {lost}\nstuck: {stuck}\ncharged twice: {dupes}", file=sys.stderr)
    return exit_status(lost, stuck, dupes, over)


def exit_status(lost: object, stuck: object, dupes: object, over: object) -> int:
    """1 if a write was lost, a workflow stuck, a step recorded twice, or a wait passed
    its bound (each given as a collection, empty if none); else 0."""
    return 1 if lost or stuck or dupes or over else 0


def _fault(cluster: Cluster, rng: random.Random, n: int, phases: list[Phase],
           started: float) -> None:
    i = rng.randrange(len(cluster.nodes))
    if rng.random() < 0.5:
        print(f"[{n + 1}] {time.monotonic() - started:.1f} s: kill -9 "
              f"{cluster.node(i).name}", flush=True)
        phases.append((time.monotonic(), KILL))
        cluster.kill9(i)
        time.sleep(rng.uniform(0.2, 1.0))
        cluster.restart(i)
    else:
        print(f"[{n + 1}] {time.monotonic() - started:.1f} s: pause "
              f"{cluster.node(i).name}", flush=True)
        phases.append((time.monotonic(), PAUSE))
        cluster.pause(i)
        time.sleep(TTL_S * rng.uniform(1.2, 2.0))
        cluster.resume(i)
    phases.append((time.monotonic(), HAND_BACK))
    print(f"[{n + 1}] {time.monotonic() - started:.1f} s: back", flush=True)
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
    p.add_argument("--slack", type=float, default=0.5,
                   help="seconds added to each bound for a request's own time (default 0.5)")
    return p


if __name__ == "__main__":
    sys.exit(main())
