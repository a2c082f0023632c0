"""Cluster mode beside a single node: an exec-durable write's latency, a workflow's CPU.

    .venv/bin/python -m bench.bench_cluster [--rounds 5] [--writes 200] [--workflows 200]
                                            [--quick]

Issue 29: "cluster exec-durable latency beside the single node's, in one run (target
<= 3x), and the CPU per three-step workflow in cluster mode, with what bounds it".

A private PostgreSQL (wkhost.testing.postgres; `bash tests/cluster/setup_postgres.sh` is
run once if it is missing) and two `wkhost serve` on 127.0.0.1, alive together, serving
the probe guest and the three-step workflow class of bench_workflows:
- "single": a single node, its actors' SQLite files its durable store;
- "cluster": a cluster of one node (`--cluster URL --node-id b1`), which holds all 256
  shards: every durable write is its local commit plus the fenced append in PostgreSQL.
Each round runs every workload on each server in turn, the order swapped from one round
to the next, so that both share each stretch of this machine's time:
- exec-durable latency: one probe actor per client (its table made before the rounds),
  sequential `POST /probe/<id>/sql` with one durable INSERT on a kept-alive http.client
  connection, at concurrency 1 and 8 (threads, each its own actor and connection); the
  round's figure is the median of all its requests;
- three-step workflows (bench_workflows' `_load`: one start request held until the
  workflow completed), at concurrency 1 and 8: per workflow, the wall time, the CPU
  (user + system, all threads, from /proc) of the server process, of PostgreSQL (the
  postmaster and every process under it, ended ones included) and of this client; for
  the cluster also the store's writes per workflow (the actors' last sequence numbers:
  a snapshot or a changeset each), their bytes, and PostgreSQL's WAL bytes.
At concurrency 1 a workflow's requests run one after another, so its wall time less the
CPU of the three processes is time nobody computed: waiting (fsyncs, wake-ups). That,
and which CPU is largest, is printed as what bounds it; at concurrency 8, the share of
one core the server process used (it is one process: near 1.0, its GIL is the bound).
PostgreSQL's CPU in the single node's windows is the idle cluster node's (renewals): the
background that is in the cluster's figures too. An idle server burns some CPU
too (lease renewals, loop ticks): each one's idle rate is measured and printed.
Saved to bench/results/cluster.json.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import os
import secrets
import statistics
import subprocess
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from bench.bench_workflows import WF, _load, bench_wasm
from bench.common import (
    REPO,
    SMOKE_HELP,
    fmt_us,
    probe_wasm,
    process_cpu_s,
    save,
    scratch_dir,
    smoke_results,
    summary,
)
from bench.server import BenchServer

SERVERS = ("single", "cluster")
LEVELS = (1, 8)
TARGET_X = 3.0
SETTLE_S = 0.5  # a window's end-of-event batches reach PostgreSQL inside it
IDLE_S = 3.0
TICK = os.sysconf("SC_CLK_TCK")
INSERT = json.dumps({"sql": "INSERT INTO t VALUES (?)", "params": [1], "durable": True})


# -- CPU, from /proc ---------------------------------------------------------------------

def _stat(pid: int) -> list[str]:
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()  # [0] is field 3, the state


def tree_cpu_s(pid: int) -> float:
    """CPU seconds of `pid`, of its reaped children (cutime, cstime: a backend that ended
    is counted there) and of every live process under it."""
    fields = _stat(pid)
    total = sum(int(fields[i]) for i in (11, 12, 13, 14))
    kids: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        kids.setdefault(parent, []).append(int(stat.parent.name))
    todo = list(kids.get(pid, []))
    while todo:
        child = todo.pop()
        try:
            total += int(_stat(child)[11]) + int(_stat(child)[12])
        except OSError:
            continue  # ended meanwhile: its time is in its parent's cutime now
        todo += kids.get(child, [])
    return total / TICK


def client_cpu_s() -> float:
    t = os.times()
    return t.user + t.system


# -- PostgreSQL and the two servers ------------------------------------------------------

def start_postgres() -> Any:
    from wkhost.testing.pg_machine import PgMissing
    from wkhost.testing.postgres import PgServer

    try:
        return PgServer.start(scratch_dir("wkbench-pg-") / "pg")
    except PgMissing:
        print("  PostgreSQL missing: bash tests/cluster/setup_postgres.sh", flush=True)
        subprocess.run(["bash", "tests/cluster/setup_postgres.sh"], cwd=REPO, check=True)
        return PgServer.start(scratch_dir("wkbench-pg-") / "pg")


def start_servers(pg_url: str) -> dict[str, BenchServer]:
    actors = {"probe": probe_wasm(), WF: bench_wasm()}
    extra = ["--access", f"{WF}=internal"]
    secret = scratch_dir("wkbench-secret-") / "cluster-secret"
    secret.write_text(secrets.token_urlsafe(32) + "\n")
    servers: dict[str, BenchServer] = {}
    try:
        servers["single"] = BenchServer(actors, extra)
        servers["cluster"] = BenchServer(actors, [*extra, "--cluster", pg_url, "--node-id",
                                                  "b1", "--cluster-secret-file", str(secret)])
    except BaseException:
        for server in servers.values():
            server.close()
        raise
    return servers


def wait_all_held(pg: Any, database: str, timeout_s: float = 60) -> None:
    """Until the node holds all 256 shards: before, a request may wait for a lease."""
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        held = pg.psql("SELECT count(*) FROM leases WHERE owner = 'b1' "
                       "AND expires_at > clock_timestamp()", database).strip()
        if held == "256":
            return
        time.sleep(0.2)
    raise RuntimeError(f"the cluster node did not take every shard within {timeout_s} s")


# -- exec-durable latency ----------------------------------------------------------------

def _post(conn: http.client.HTTPConnection, path: str, body: str, token: str) -> None:
    conn.request("POST", path, body, {"Authorization": f"Bearer {token}",
                                      "Content-Type": "application/json"})
    resp = conn.getresponse()
    answer = resp.read()
    if resp.status != 200 or b'"error"' in answer:
        raise RuntimeError(f"POST {path}: {resp.status} {answer[:200]!r}")


def _connect(url: str) -> http.client.HTTPConnection:
    u = urlsplit(url)
    assert u.hostname == "127.0.0.1", url
    return http.client.HTTPConnection(u.hostname, u.port, timeout=60)


def make_tables(server: BenchServer, ids: list[str]) -> None:
    conn = _connect(server.url)
    try:
        for actor in ids:
            _post(conn, f"/probe/{actor}/sql", json.dumps(
                {"sql": "CREATE TABLE IF NOT EXISTS t (v)", "params": [], "durable": True}),
                server.token)
    finally:
        conn.close()


def durable_writes(server: BenchServer, ids: list[str], writes: int) -> list[float]:
    """Each actor of `ids` on a thread of its own: `writes` durable INSERTs one after
    another; every request's latency in µs."""
    latencies: list[float] = []
    errors: list[BaseException] = []
    ready = threading.Barrier(len(ids))

    def client(actor: str) -> None:
        conn = _connect(server.url)
        mine = []
        try:
            ready.wait(30)
            for _ in range(writes):
                t0 = time.perf_counter()
                _post(conn, f"/probe/{actor}/sql", INSERT, server.token)
                mine.append((time.perf_counter() - t0) * 1e6)
        except BaseException as e:  # re-raised by the caller, in its thread
            errors.append(e)
        finally:
            conn.close()
            latencies.extend(mine)

    threads = [threading.Thread(target=client, args=(a,), daemon=True) for a in ids]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return latencies


# -- a workflow's CPU --------------------------------------------------------------------

def store_writes(pg: Any, database: str, tag: str) -> dict[str, float]:
    """The store's writes for the workflows tagged `tag`: the actors' last sequence
    numbers (each write, snapshot or changeset, takes one), and the bytes kept."""
    like = f"'{WF}/{tag}-%'"
    row = pg.psql(
        f"SELECT count(*), coalesce(sum(seq), 0), "
        f"(SELECT count(*) FROM snapshots WHERE actor LIKE {like}), "
        f"(SELECT coalesce(sum(length(cs)), 0) FROM changelog WHERE actor LIKE {like}), "
        f"(SELECT coalesce(sum(length(db)), 0) FROM snapshots WHERE actor LIKE {like}) "
        f"FROM actors WHERE actor LIKE {like}", database).strip().split("|")
    actors, writes, snaps, cs_bytes, snap_bytes = (int(x) for x in row)
    n = max(actors, 1)
    return {"actors": actors, "writes_per_wf": writes / n, "snapshots_per_wf": snaps / n,
            "changeset_bytes_per_wf": cs_bytes / n, "snapshot_bytes_per_wf": snap_bytes / n}


def workflows(server: BenchServer, pg: Any, database: str, level: int, count: int,
              tag: str, settle_s: float = SETTLE_S) -> dict[str, float]:
    """`count` three-step workflows at concurrency `level`; per workflow, µs."""
    lsn = pg.psql("SELECT pg_current_wal_insert_lsn()", database).strip()
    before = (process_cpu_s(server.proc.pid), tree_cpu_s(pg.pid), client_cpu_s(),
              time.perf_counter())
    done = asyncio.run(_load(server.url, server.token, level, count, tag))
    wall = time.perf_counter() - before[3]
    time.sleep(settle_s)
    node, store, client = (process_cpu_s(server.proc.pid) - before[0],
                           tree_cpu_s(pg.pid) - before[1], client_cpu_s() - before[2])
    if done["failures"]:
        raise RuntimeError(f"{int(done['failures'])} of {count} workflows failed")
    per = 1e6 / count
    out = {"wall_us": wall * per, "node_cpu_us": node * per, "pg_cpu_us": store * per,
           "client_cpu_us": client * per, "wf_per_s": done["wf_per_s"]}
    wal = pg.psql(f"SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '{lsn}')",
                  database).strip()
    out["pg_wal_bytes_per_wf"] = float(wal) / count
    if "--cluster" in list(server.proc.args):  # type: ignore[arg-type]
        out.update(store_writes(pg, database, tag))
    return out


# -- the run ------------------------------------------------------------------------------

def idle_rates(servers: dict[str, BenchServer], pg: Any, idle_s: float = IDLE_S
               ) -> dict[str, float]:
    """CPU ms a second of each server, and of PostgreSQL, while nothing is asked."""
    before = {n: process_cpu_s(s.proc.pid) for n, s in servers.items()}
    pg_before = tree_cpu_s(pg.pid)
    time.sleep(idle_s)
    out = {n: (process_cpu_s(s.proc.pid) - before[n]) / idle_s * 1e3
           for n, s in servers.items()}
    out["postgresql"] = (tree_cpu_s(pg.pid) - pg_before) / idle_s * 1e3
    return out


def one_round(r: int, servers: dict[str, BenchServer], pg: Any, database: str,
              args: argparse.Namespace, lat: dict[str, Any], wf: dict[str, Any]) -> None:
    order = SERVERS if r % 2 == 0 else SERVERS[::-1]
    print(f"  round {r + 1}/{args.rounds}: {', '.join(order)}", flush=True)
    for name in order:
        server = servers[name]
        for level in LEVELS:
            ids = [f"lat-c{level}-{i}" for i in range(level)]
            got = durable_writes(server, ids, args.writes // level)
            lat[name][level].append(statistics.median(got))
        for level in LEVELS:
            wf[name][level].append(workflows(server, pg, database, level, args.workflows,
                                             f"r{r}-c{level}", args.settle_s))


def run(args: argparse.Namespace) -> dict[str, Any]:
    pg = start_postgres()
    servers: dict[str, BenchServer] = {}
    try:
        database = "wkbench"
        url = pg.create_database(database)
        servers = start_servers(url)
        wait_all_held(pg, database)
        for name, server in servers.items():  # past the live cap (96), as bench_workflows
            make_tables(server, [f"lat-c{c}-{i}" for c in LEVELS for i in range(c)])
            durable_writes(server, [f"lat-c8-{i}" for i in range(8)], 20)
            asyncio.run(_load(server.url, server.token, 8, args.warmup, f"warmup-{name}"))
        time.sleep(args.settle_s)
        idle = idle_rates(servers, pg, args.idle_s)
        lat: dict[str, Any] = {n: {c: [] for c in LEVELS} for n in SERVERS}
        wf: dict[str, Any] = {n: {c: [] for c in LEVELS} for n in SERVERS}
        for r in range(args.rounds):
            one_round(r, servers, pg, database, args, lat, wf)
        version = pg.psql("SHOW server_version", database).strip()
    finally:
        for server in servers.values():
            server.close()
        pg.close()
    return {"postgresql": version, "idle_cpu_ms_per_s": idle, **figures(lat, wf)}


# -- the figures ----------------------------------------------------------------------------

def bound(fig: dict[str, Any]) -> str:
    """What a workflow's time goes to, at concurrency 1 (its requests in sequence)."""
    parts = {"node CPU": fig["node_cpu_us"]["median"], "PostgreSQL CPU": fig["pg_cpu_us"]
             ["median"], "client CPU": fig["client_cpu_us"]["median"]}
    parts["waiting"] = max(0.0, fig["wall_us"]["median"] - sum(parts.values()))
    top = max(parts, key=lambda k: parts[k])
    share = parts[top] / max(fig["wall_us"]["median"], 1e-9)
    return f"{top} ({share:.0%} of the wall time)"


def node_cores(fig: dict[str, Any]) -> float:
    """The server's CPU over the wall time: near 1.0, its one process (its GIL) is full."""
    return float(fig["node_cpu_us"]["median"] / max(fig["wall_us"]["median"], 1e-9))


def figures(lat: dict[str, Any], wf: dict[str, Any]) -> dict[str, Any]:
    latency: dict[str, Any] = {}
    for level in LEVELS:
        single, cluster = lat["single"][level], lat["cluster"][level]
        latency[str(level)] = {
            "single_us": summary(single), "cluster_us": summary(cluster),
            "ratio": statistics.median(cluster) / statistics.median(single),
            "target": f"<= {TARGET_X:g}x",
            "met": statistics.median(cluster) <= TARGET_X * statistics.median(single)}
    work: dict[str, Any] = {}
    for name in SERVERS:
        for level in LEVELS:
            runs = wf[name][level]
            fig = {k: summary([x[k] for x in runs]) for k in runs[0]}
            work.setdefault(name, {})[str(level)] = fig
    for name in SERVERS:
        work[name]["bound_at_1"] = bound(work[name]["1"])
        work[name]["node_cores_at_8"] = node_cores(work[name]["8"])
    return {"durable_write_latency": latency, "workflow": work}


def print_figures(out: dict[str, Any]) -> None:
    def cell(s: dict[str, float]) -> str:
        return f"{fmt_us(s['median'])} ({fmt_us(s['min'])}..{fmt_us(s['max'])})"

    print(f"\ncluster mode beside a single node (PostgreSQL {out['postgresql']}): "
          "median (min..max) over the rounds")
    print("  idle, ms of CPU a second: " + ", ".join(
        f"{n} {v:.1f}" for n, v in out["idle_cpu_ms_per_s"].items()))
    print("\n  exec-durable INSERT, latency per request")
    for level, d in out["durable_write_latency"].items():
        met = "yes" if d["met"] else "NO"
        print(f"    concurrency {level}: single {cell(d['single_us']):>30}  cluster "
              f"{cell(d['cluster_us']):>30}  cluster/single {d['ratio']:.2f}x "
              f"(target {d['target']}: {met})")
    print("\n  three-step workflow, per workflow (µs: wall, CPU of node, PostgreSQL, client)")
    for name in SERVERS:
        for level in map(str, LEVELS):
            f = out["workflow"][name][level]
            print(f"    {name:<8} c{level}: wall {cell(f['wall_us'])}, node "
                  f"{cell(f['node_cpu_us'])}, pg {fmt_us(f['pg_cpu_us']['median'])}, client "
                  f"{fmt_us(f['client_cpu_us']['median'])}; "
                  f"{f['wf_per_s']['median']:,.0f}/s; "
                  f"WAL {f['pg_wal_bytes_per_wf']['median']:,.0f} B")
            if "writes_per_wf" in f:
                print(f"             store writes {f['writes_per_wf']['median']:.2f} "
                      f"(snapshots {f['snapshots_per_wf']['median']:.2f}), changesets "
                      f"{f['changeset_bytes_per_wf']['median']:,.0f} B + snapshot "
                      f"{f['snapshot_bytes_per_wf']['median']:,.0f} B")
        print(f"    {name}: at concurrency 1 the most of a workflow's time is "
              f"{out['workflow'][name]['bound_at_1']}; at 8 the server process uses "
              f"{out['workflow'][name]['node_cores_at_8']:.2f} of a core")


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--writes", type=int, default=200, help="durable writes a round, each "
                   "level (at concurrency 8, this many over the 8 clients)")
    p.add_argument("--workflows", type=int, default=200, help="a round, each level")
    p.add_argument("--warmup", type=int, default=200, help="workflows first")
    p.add_argument("--quick", action="store_true", help="2 rounds, a quarter of each load")
    p.add_argument("--smoke", action="store_true", help=SMOKE_HELP + " (1 round of 8 writes "
                   "and 4 workflows a level, 4 first, shorter settles and idle window)")
    args = p.parse_args(argv)
    args.settle_s, args.idle_s = SETTLE_S, IDLE_S
    if args.quick:
        args.rounds, args.writes, args.workflows, args.warmup = (
            2, args.writes // 4, args.workflows // 4, args.warmup // 4)
    if args.smoke:
        smoke_results()
        args.rounds, args.writes, args.workflows, args.warmup = 1, 8, 4, 4
        args.settle_s, args.idle_s = 0.2, 0.3
    if min(args.rounds, args.writes // max(LEVELS), args.workflows) < 1:
        p.error("--rounds and --workflows must be at least 1, --writes at least 8")
    out = run(args)
    print_figures(out)
    saved = save("cluster", {"rounds": args.rounds, "writes": args.writes,
                             "workflows": args.workflows, "settle_s": args.settle_s, **out})
    print(f"\n  saved {saved}")
    return out


if __name__ == "__main__":
    main()
