"""DBOS Transact on SQLite: bench_groups' four workloads, in-process.

    .cache/peers-venv/bin/python bench/peers/dbos_groups.py [--runs 25] [--branches 100]

Run by bench.bench_groups with the peers' venv (never the product's), DBOS as shipped on
SQLite (its system database in a fresh temp dir), as dbos_peer.py. Each workload is timed
from the call to its result, a median (min, max) over `runs`, the workloads taking turns
within each round (two warm-up rounds first):
- "three-step workflow": a workflow of three steps (small dict results);
- "child round trip (child: 3 steps)": a workflow that starts that three-step workflow as
  a child (DBOS.start_workflow inside a workflow) and returns its result;
- "fan-out: N step branches": DBOS's fan-out within one workflow, an async workflow that
  gathers N async steps (asyncio.gather), run on one event loop kept for the whole run;
- "N sequential steps": a workflow of N steps;
- with `--slow URL`, only "fan-out: N slow calls" (bench_overlap): an async workflow that
  gathers N async steps, each an async POST (httpx) to URL, which holds it;
- with `--updates`, only bench_updates' two (DBOS has no updates: a message the running
  workflow applies and answers is DBOS's send, recv and events): "start: one step", a
  workflow of one step; "update: one step", a message to a running workflow (DBOS.send)
  that it takes (DBOS.recv), prices with a step and answers (DBOS.set_event), timed from
  the send to the answer read (DBOS.get_event).
Prints a JSON document on its last stdout line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

from dbos import DBOS


def summary(xs: list[float]) -> dict[str, Any]:
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs), "n": len(xs)}


def _value(i: int) -> dict[str, Any]:
    return {"order": f"ord-{i:06d}", "status": "charged", "n": i}


def _messages(cart: Callable[[int], int]) -> Callable[[], Any]:
    """One message round trip a call, to one cart workflow started at the first."""
    state: dict[str, Any] = {"n": 0}

    def one() -> Any:
        if "id" not in state:
            state["id"] = DBOS.start_workflow(cart, 100_000).workflow_id
        i, state["n"] = state["n"], state["n"] + 1
        DBOS.send(state["id"], "book", "add")
        return DBOS.get_event(state["id"], f"r{i}", timeout_seconds=60)

    return one


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=25)
    p.add_argument("--branches", type=int, default=100)
    p.add_argument("--slow", help="only bench_overlap's fan-out: each branch a POST to "
                   "this URL (a local site that holds it)")
    p.add_argument("--updates", action="store_true", help="only bench_updates' workloads")
    args = p.parse_args()
    data = tempfile.mkdtemp(prefix="dbos-groups-")
    logging.getLogger("dbos").setLevel(logging.WARNING)
    DBOS(config={"name": "wkgroups", "system_database_url": f"sqlite:///{data}/dbos.sqlite",
                 "log_level": "WARNING", "run_admin_server": False})  # type: ignore[typeddict-unknown-key]

    @DBOS.step()
    def step(i: int) -> dict[str, Any]:
        return _value(i)

    @DBOS.workflow()
    def steps(n: int) -> dict[str, Any]:
        for i in range(n):
            step(i)
        return {"steps": n}

    @DBOS.workflow()
    def parent(n: int) -> dict[str, Any]:
        return {"child": DBOS.start_workflow(steps, n).get_result()}

    @DBOS.step()
    async def branch(i: int) -> dict[str, Any]:
        return _value(i)

    @DBOS.workflow()
    async def fan(n: int) -> dict[str, Any]:
        got = await asyncio.gather(*(branch(i) for i in range(n)))
        return {"branches": len(got), "last": got[-1]["n"] if got else None}

    clients: list[Any] = []  # one, made in the run's loop at its first use

    @DBOS.step()
    async def slow_branch(url: str, i: int) -> str:
        import httpx

        if not clients:  # a client per call would cost its SSL context's making each time
            clients.append(httpx.AsyncClient(timeout=60, limits=httpx.Limits(
                max_connections=1000)))
        r = await clients[0].post(f"{url}/b{i}", content=f"branch {i}")
        return str(r.text)

    @DBOS.workflow()
    async def slow_fan(url: str, n: int) -> list[str]:
        return list(await asyncio.gather(*(slow_branch(url, i) for i in range(n))))

    @DBOS.step()
    def price(sku: str) -> dict[str, Any]:
        return {"sku": sku, "cents": 100 * len(sku)}

    @DBOS.workflow()
    def cart(n: int) -> int:
        for i in range(n):
            DBOS.set_event(f"r{i}", price(DBOS.recv("add", timeout_seconds=120)))
        return n

    DBOS.launch()
    loop = asyncio.new_event_loop()
    n = args.branches
    kinds: dict[str, tuple[Callable[[], Any], Any]] = {
        "three-step workflow": (lambda: steps(3), {"steps": 3}),
        "child round trip (child: 3 steps)": (lambda: parent(3), {"child": {"steps": 3}}),
        f"fan-out: {n} step branches": (lambda: loop.run_until_complete(fan(n)),
                                        {"branches": n, "last": n - 1}),
        f"{n} sequential steps": (lambda: steps(n), {"steps": n}),
    }
    if args.slow is not None:  # bench_overlap's one workload
        kinds = {f"fan-out: {n} slow calls": (
            lambda: loop.run_until_complete(slow_fan(args.slow, n)), ["ok"] * n)}
    if args.updates:  # bench_updates' two
        kinds = {"start: one step": (lambda: steps(1), {"steps": 1}),
                 "update: one step": (_messages(cart), {"sku": "book", "cents": 400})}
    samples: dict[str, list[float]] = {name: [] for name in kinds}
    try:
        for r in range(args.runs + 2):
            for name, (call, want) in kinds.items():
                t0 = time.perf_counter()
                out = call()
                us = (time.perf_counter() - t0) * 1e6
                if out != want:
                    raise RuntimeError(f"{name}: {out!r}, not {want!r}")
                if r >= 2:
                    samples[name].append(us)
        figures: dict[str, Any] = {name: summary(s) for name, s in samples.items()}
        from importlib.metadata import version

        figures["version"] = (f"dbos {version('dbos')}, Python {sys.version.split()[0]}, "
                              f"pid {os.getpid()}")
        figures["storage"] = "SQLite (DBOS defaults), system database in a temp dir"
    finally:
        loop.close()
        DBOS.destroy()
        shutil.rmtree(data, ignore_errors=True)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
