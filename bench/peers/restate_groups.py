"""Restate (restate-server from npm, Python SDK restate-sdk): bench_groups' four workloads,
over 127.0.0.1 only.

    .cache/peers-venv/bin/python bench/peers/restate_groups.py --server PATH [--runs 25]
                                                                [--branches 100]

Starts restate-server as restate_peer.py does (telemetry off, every listener on
127.0.0.1, a temp base dir, 4 partitions), serves two Python services with hypercorn on
127.0.0.1 (`Groups`, and `GroupChild` for the children), registers them, and calls each
workload through the ingress, waiting for its result (HTTP/1.1 keep-alive), timed from
the request to the answer, a median (min, max) over `runs`, the workloads taking turns
within each round (two warm-up rounds first):
- "three-step workflow": a handler of three `ctx.run` steps (small dict results);
- "child round trip (child: 3 steps)": a handler that calls GroupChild's three-step
  handler (`ctx.service_call`: a durable call to another invocation) and returns its
  result;
- "fan-out: N step branches": N `ctx.run` futures made at once, then `restate.gather`;
- "N sequential steps": N `ctx.run` steps, one after another;
- with `--slow URL`, only "fan-out: N slow calls" (bench_overlap): N `ctx.run` futures,
  each an async POST (httpx) to URL, which holds it, gathered;
- with `--updates`, only bench_updates' two: "start: one step", a handler of one
  `ctx.run` step; "update: one step", a call of a virtual object's exclusive handler
  (Restate's keyed state, one call at a time: what an update to one instance is) that
  prices with a `ctx.run` step, keeps a count in its state and answers.
Everything it starts is stopped at the end. Prints a JSON document on its last line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

import httpx
import restate
from restate_peer import free_port, wait_http  # type: ignore[import-not-found]

groups = restate.Service("Groups")
child = restate.Service("GroupChild")
cart = restate.VirtualObject("Cart")


async def _value(i: int) -> dict[str, Any]:
    return {"order": f"ord-{i:06d}", "status": "charged", "n": i}


@child.handler()
async def child_steps(ctx: restate.Context, n: int) -> dict[str, Any]:
    for i in range(n):
        await ctx.run_typed("step", _value, i=i)
    return {"steps": n}


@groups.handler()
async def steps(ctx: restate.Context, n: int) -> dict[str, Any]:
    for i in range(n):
        await ctx.run_typed("step", _value, i=i)
    return {"steps": n}


@groups.handler()
async def parent(ctx: restate.Context, n: int) -> dict[str, Any]:
    return {"child": await ctx.service_call(child_steps, arg=n)}


@groups.handler()
async def fan(ctx: restate.Context, n: int) -> dict[str, Any]:
    futures = [ctx.run_typed(f"branch {i}", _value, i=i) for i in range(n)]
    await restate.gather(*futures)
    got = [await f for f in futures]
    return {"branches": len(got), "last": got[-1]["n"] if got else None}


async def _price(sku: str) -> dict[str, Any]:
    return {"sku": sku, "cents": 100 * len(sku)}


@cart.handler()
async def add(ctx: restate.ObjectContext, sku: str) -> dict[str, Any]:
    got = await ctx.run_typed("price", _price, sku=sku)
    ctx.set("items", (await ctx.get("items") or 0) + 1)
    return got


_clients: list[httpx.AsyncClient] = []  # one, made in the SDK's loop at its first use


async def _post(url: str, i: int) -> str:
    if not _clients:  # a client per call would cost its SSL context's making each time
        _clients.append(httpx.AsyncClient(timeout=60, limits=httpx.Limits(
            max_connections=1000)))
    r = await _clients[0].post(f"{url}/b{i}", content=f"branch {i}")
    return r.text


@groups.handler()
async def slow_fan(ctx: restate.Context, req: dict[str, Any]) -> list[str]:
    futures = [ctx.run_typed(f"branch {i}", _post, url=req["url"], i=i)
               for i in range(int(req["n"]))]
    await restate.gather(*futures)
    return [await f for f in futures]


def summary(xs: list[float]) -> dict[str, Any]:
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs), "n": len(xs)}


def serve_sdk(port: int) -> tuple[threading.Thread, dict[str, Any]]:
    from hypercorn.asyncio import serve
    from hypercorn.config import Config

    cfg = Config()
    cfg.bind = [f"127.0.0.1:{port}"]
    cfg.h2_max_concurrent_streams = 1000
    cfg.loglevel = "ERROR"
    app = restate.app(services=[groups, child, cart])
    state: dict[str, Any] = {}

    def run() -> None:
        loop = asyncio.new_event_loop()
        stop = asyncio.Event()
        state.update(loop=loop, stop=stop)
        loop.run_until_complete(serve(app, cfg, shutdown_trigger=stop.wait))  # type: ignore[arg-type]

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, state


def _config(base: str, ingress: int, admin: int) -> str:
    path = os.path.join(base, "restate.toml")
    node = free_port()
    with open(path, "w") as f:
        f.write(f"""
disable-telemetry = true
default-num-partitions = 4
bind-address = "127.0.0.1:{node}"
advertised-address = "http://127.0.0.1:{node}"
[ingress]
bind-address = "127.0.0.1:{ingress}"
[admin]
bind-address = "127.0.0.1:{admin}"
[admin.query-engine]
pgsql-bind-address = "127.0.0.1:{free_port()}"
""")
    return path


def measure(ingress: str, runs: int, n: int, slow: str | None, updates: bool
            ) -> dict[str, Any]:
    kinds: dict[str, tuple[str, Any, Any]] = {
        "three-step workflow": ("Groups/steps", 3, {"steps": 3}),
        "child round trip (child: 3 steps)": ("Groups/parent", 3, {"child": {"steps": 3}}),
        f"fan-out: {n} step branches": ("Groups/fan", n, {"branches": n, "last": n - 1}),
        f"{n} sequential steps": ("Groups/steps", n, {"steps": n}),
    }
    if slow is not None:  # bench_overlap's one workload
        kinds = {f"fan-out: {n} slow calls": ("Groups/slow_fan", {"url": slow, "n": n},
                                              ["ok"] * n)}
    if updates:  # bench_updates' two
        kinds = {"start: one step": ("Groups/steps", 1, {"steps": 1}),
                 "update: one step": ("Cart/c1/add", "book", {"sku": "book", "cents": 400})}
    client = httpx.Client(timeout=120)
    deadline = time.monotonic() + 30
    while True:  # the ingress learns the deployment shortly after the admin takes it
        r = client.post(f"{ingress}/Groups/steps", json=3)
        if r.status_code == 200 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    if r.status_code != 200:
        raise RuntimeError(f"invoking: {r.status_code} {r.text[:300]}")
    samples: dict[str, list[float]] = {name: [] for name in kinds}
    for rep in range(runs + 2):
        for name, (path, arg, want) in kinds.items():
            t0 = time.perf_counter()
            r = client.post(f"{ingress}/{path}", json=arg)
            us = (time.perf_counter() - t0) * 1e6
            if r.status_code != 200 or r.json() != want:
                raise RuntimeError(f"{name}: {r.status_code} {r.text[:300]}")
            if rep >= 2:
                samples[name].append(us)
    client.close()
    return {name: summary(s) for name, s in samples.items()}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--server", required=True)
    p.add_argument("--runs", type=int, default=25)
    p.add_argument("--branches", type=int, default=100)
    p.add_argument("--slow", help="only bench_overlap's fan-out: each branch a POST to "
                   "this URL (a local site that holds it)")
    p.add_argument("--updates", action="store_true", help="only bench_updates' workloads")
    args = p.parse_args()
    base = tempfile.mkdtemp(prefix="restate-groups-")
    ingress_port, admin_port, sdk_port = (free_port() for _ in range(3))
    config = _config(base, ingress_port, admin_port)
    env = {**os.environ, "RESTATE_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "1"}
    log = open(os.path.join(base, "server.log"), "w")  # noqa: SIM115  # closed in finally
    server = subprocess.Popen(
        [args.server, "--config-file", config, "--base-dir", base, "--no-logo",
         "--listen-mode", "tcp"], stdout=log, stderr=subprocess.STDOUT, env=env)
    sdk: dict[str, Any] = {}
    try:
        _, sdk = serve_sdk(sdk_port)
        admin = f"http://127.0.0.1:{admin_port}"
        wait_http(f"{admin}/health")
        wait_http(f"http://127.0.0.1:{sdk_port}/discover", 30)
        r = httpx.post(f"{admin}/deployments", json={"uri": f"http://127.0.0.1:{sdk_port}"},
                       timeout=30)
        if r.status_code >= 300:
            raise RuntimeError(f"registering the services: {r.status_code} {r.text[:300]}")
        figures = measure(f"http://127.0.0.1:{ingress_port}", args.runs, args.branches,
                          args.slow, args.updates)
        version = subprocess.run([args.server, "--version"], capture_output=True, text=True)
        from importlib.metadata import version as pkg_version
        figures["version"] = (f"{version.stdout.strip()}, restate-sdk "
                              f"{pkg_version('restate-sdk')}, Python {sys.version.split()[0]}")
        figures["storage"] = "Restate's own log and RocksDB, 4 partitions, in a temp dir"
    finally:
        server.terminate()
        try:
            server.wait(20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()
        if "loop" in sdk:
            sdk["loop"].call_soon_threadsafe(sdk["stop"].set)
        shutil.rmtree(base, ignore_errors=True)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
