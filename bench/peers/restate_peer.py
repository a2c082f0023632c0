"""Restate (server from npm @restatedev/restate-server, Python SDK restate-sdk): the same
workflow workloads as bench_workflows, over 127.0.0.1 only.

    .cache/peers-venv/bin/python bench/peers/restate_peer.py --server PATH [--repeats 5]

Starts restate-server (telemetry disabled, every listener on 127.0.0.1, a temp base dir,
4 partitions), serves a Python service with hypercorn on 127.0.0.1, registers it, and
calls it through the ingress (HTTP/1.1 keep-alive, waiting for the result):
- step: a handler with N `ctx.run` steps (N = 10, 50); the slope per step;
- throughput: three-step invocations, C concurrent clients, C in 1, 8, 32.
Everything it starts is stopped at the end. Prints a JSON document on its last line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import restate

# The throughput client is wkhost's (stdlib only): every server measured with the same one.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench.httpload import Connection, drive  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def summary(xs: list[float]) -> dict[str, Any]:
    # "runs" too: python -m bench pools two runs of a peer (bench.peers.merge)
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs), "n": len(xs),
            "runs": list(xs)}


svc = restate.Service("Bench")


async def _value(i: int) -> dict[str, Any]:
    return {"order": f"ord-{i:06d}", "status": "charged", "n": i}


@svc.handler()
async def steps(ctx: restate.Context, n: int) -> dict[str, Any]:
    for i in range(n):
        await ctx.run_typed("step", _value, i=i)
    return {"steps": n}


def serve_sdk(port: int) -> threading.Thread:
    from hypercorn.asyncio import serve
    from hypercorn.config import Config

    cfg = Config()
    cfg.bind = [f"127.0.0.1:{port}"]
    cfg.h2_max_concurrent_streams = 1000
    cfg.loglevel = "ERROR"
    app = restate.app(services=[svc])
    stop = asyncio.Event()

    def run() -> None:
        loop = asyncio.new_event_loop()
        serve_sdk.loop = loop  # type: ignore[attr-defined]
        serve_sdk.stop = stop  # type: ignore[attr-defined]
        loop.run_until_complete(serve(app, cfg, shutdown_trigger=stop.wait))  # type: ignore[arg-type]

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def wait_http(url: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx.get(url, timeout=1).status_code < 500:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{url} did not come up")


async def throughput(ingress: str, level: int, total: int) -> dict[str, float]:
    """`level` clients at once, through the client the wkhost figures use (httpload)."""

    async def one(conn: Connection, _i: int) -> bool:
        status, body = await conn.request("POST", "/Bench/steps", b"3", "application/json")
        return status == 200 and json.loads(body) == {"steps": 3}

    result = await drive(ingress, {}, level, total, one)
    figures = result.figures(total)
    return {k: figures[k] for k in ("wf_per_s", "p50_ms", "failures")}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--server", required=True)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--workflows", type=int, default=200)
    p.add_argument("--levels", default="1,8,32")
    args = p.parse_args()
    base = tempfile.mkdtemp(prefix="restate-bench-")
    ingress_port, admin_port, node_port, sdk_port = (free_port() for _ in range(4))
    config = os.path.join(base, "restate.toml")
    with open(config, "w") as f:
        f.write(f"""
disable-telemetry = true
default-num-partitions = 4
bind-address = "127.0.0.1:{node_port}"
advertised-address = "http://127.0.0.1:{node_port}"
[ingress]
bind-address = "127.0.0.1:{ingress_port}"
[admin]
bind-address = "127.0.0.1:{admin_port}"
[admin.query-engine]
pgsql-bind-address = "127.0.0.1:{free_port()}"
""")
    env = {**os.environ, "RESTATE_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "1"}
    log = open(os.path.join(base, "server.log"), "w")  # noqa: SIM115  # closed in finally
    server = subprocess.Popen(
        [args.server, "--config-file", config, "--base-dir", base, "--no-logo",
         "--listen-mode", "tcp"], stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        serve_sdk(sdk_port)
        admin = f"http://127.0.0.1:{admin_port}"
        ingress = f"http://127.0.0.1:{ingress_port}"
        wait_http(f"{admin}/health")
        wait_http(f"http://127.0.0.1:{sdk_port}/discover", 30)
        r = httpx.post(f"{admin}/deployments", json={"uri": f"http://127.0.0.1:{sdk_port}"},
                       timeout=30)
        if r.status_code >= 300:
            raise RuntimeError(f"registering the service: {r.status_code} {r.text[:300]}")
        client = httpx.Client(timeout=60)
        deadline = time.monotonic() + 30
        while True:  # the ingress learns the deployment shortly after the admin takes it
            r = client.post(f"{ingress}/Bench/steps", json=3)
            if r.status_code == 200 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        if r.status_code != 200:
            raise RuntimeError(f"invoking: {r.status_code} {r.text[:300]}")
        per_n: dict[int, list[float]] = {10: [], 50: []}
        slopes = []
        for rep in range(args.repeats + 1):
            pair = {}
            for n in (10, 50):
                t0 = time.perf_counter()
                r = client.post(f"{ingress}/Bench/steps", json=n)
                pair[n] = (time.perf_counter() - t0) * 1e6
                assert r.status_code == 200 and r.json() == {"steps": n}, r.text
            if rep:
                per_n[10].append(pair[10])
                per_n[50].append(pair[50])
                slopes.append((pair[50] - pair[10]) / 40)
        figures: dict[str, Any] = {"step_us": summary(slopes),
                                   "workflow_10_us": summary(per_n[10]),
                                   "workflow_50_us": summary(per_n[50]), "throughput": {}}
        for level in (int(x) for x in args.levels.split(",")):
            runs = [asyncio.run(throughput(ingress, level, args.workflows))
                    for _ in range(max(1, args.repeats // 2 + 1))]
            figures["throughput"][str(level)] = {
                "wf_per_s": summary([x["wf_per_s"] for x in runs]),
                "p50_ms": statistics.median(x["p50_ms"] for x in runs),
                "failures": sum(int(x["failures"]) for x in runs)}
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
        loop = getattr(serve_sdk, "loop", None)
        if loop is not None:
            loop.call_soon_threadsafe(serve_sdk.stop.set)  # type: ignore[attr-defined]
        shutil.rmtree(base, ignore_errors=True)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
