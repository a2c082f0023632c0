"""Hostile neighbours: a healthy actor's latency while other actors attack the host, and
the server's peak RSS meanwhile.

    .venv/bin/python -m bench.bench_hostile [--quick] [--phase-s 10] [--requests 200]
                                            [--hostile 4] [--slow 100]

One real `wkhost serve` on 127.0.0.1 (port 0, a scratch data directory) serves the probe
guest (tests/guests/probe.py) with a wall budget of 2 s, so that a hostile statement is
cut in bounded time. The neighbour is one actor, `probe/neighbour`, sent GET /now (one
event, no SQL) on a new connection each time, up to `--requests` times in a phase, paced
evenly over the phase. The phases, in order:
- quiet: the neighbour alone (the baseline);
- sql: `--hostile` other actors, one client each, loop one hostile statement (POST /sql)
  for the phase: a recursive CTE that never ends (cut at its deadline); a 1 MiB
  `randomblob` doubled by `s || s` past the value cap (32 MiB); `instr` of a 4 MiB needle
  in an 8 MiB haystack that both nearly match (quadratic in SQLite's own instr); a sort
  of rows made without end, `ORDER BY` with an offset that keeps every row (cut by its
  deadline or by SQLite's process-wide heap limit);
- output flood: `--hostile` actors loop POST /print?n=100000 (200,000 lines each);
- slowloris: `--slow` connections each send a request line, then one byte of a header
  every second, never ending the head, for the phase (at least the server's header
  timeout and 3 s more, so that its closing them is seen);
- quiet, after: the neighbour alone again (the server recovered; the RSS left behind);
- then, on a server of their own, the cases of host work over guest data (issue 36 items
  1-4: astral trims, a schema image's learning, large result sets, non-UTF-8 text read
  for traces), each with its own quiet phase first: bench/hostile_data.py
  (`--data-only` runs just those).

For each phase: the neighbour's median, min, max and p99 latency, its ratio to the quiet
phase's median, the neighbour's failed requests, the server's peak RSS (VmHWM from
/proc/<pid>/status, reset at the phase's start through /proc/<pid>/clear_refs; VmRSS
sampled every 25 ms; both summed over the server's process tree), and the hostile
requests answered ok, answered with an error, or not answered. Results in
bench/results/bench_hostile.json.

The ratio rule of docs/performance.md ("against each peer measured in the same run"):
no peer runs guest SQL, so there is no peer to set beside these figures. The ratio is
against the quiet phase of the same server in the same run.

Every loop is bounded in count and in time, and stops by itself; all traffic goes to
127.0.0.1. The exit status is 1 if the server died or the neighbour had a failed request.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from wkhost.engine.components import load_component, make_engine

from bench.common import (
    COMPILED,
    SMOKE_HELP,
    fmt_us,
    print_table,
    probe_wasm,
    remove_scratch,
    save,
    smoke_results,
    summary,
)
from bench.httpload import Connection, HttpError
from bench.server import BenchServer

WALL_BUDGET_MS = 2000
HEADER_TIMEOUT_DEFAULT_S = 10.0  # the host's own default (wkhost serve --help)
NEIGHBOUR = "/probe/neighbour/now"
MAX_HOSTILE_REQUESTS = 10_000  # per client and phase, whatever the phase's length
SAMPLE_S = 0.025

SQL_CASES = {
    "sql: recursive CTE, no end": (
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
        "SELECT count(*) FROM c"),
    "sql: randomblob, s||s past the cap": (
        "WITH RECURSIVE d(s, n) AS (SELECT randomblob(1048576), 0 UNION ALL "
        "SELECT s || s, n + 1 FROM d WHERE n < 12) SELECT max(length(s)) FROM d"),
    "sql: instr, 4 MiB needle, 8 MiB": (
        "WITH h(s) AS (SELECT replace(hex(zeroblob(4194304)), '0', 'a')) "
        "SELECT instr(s, substr(s, 1, 4194304) || 'b'), length(s) FROM h"),
    "sql: ORDER BY, rows without end": (
        "SELECT length(b) FROM (WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL "
        "SELECT n + 1 FROM c) SELECT n, randomblob(200) AS b FROM c) "
        "ORDER BY b LIMIT 1 OFFSET 1000000000"),
}
FLOOD = "/print?n=100000"


# -- the server's memory --------------------------------------------------------------------

def process_tree(pid: int) -> list[int]:
    pids, todo = [], [pid]
    while todo:
        p = todo.pop()
        pids.append(p)
        for task in Path(f"/proc/{p}/task").glob("*/children"):
            with contextlib.suppress(OSError):
                todo += [int(c) for c in task.read_text().split()]
    return pids


def status_kib(pid: int, name: str) -> int:
    """A /proc/<pid>/status field in KiB, summed over the process tree (0 once gone)."""
    total = 0
    for p in process_tree(pid):
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith(name + ":"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total


def reset_peak(pid: int) -> bool:
    """Reset VmHWM to the current RSS (Linux >= 4.0), for each process of the tree."""
    ok = True
    for p in process_tree(pid):
        try:
            Path(f"/proc/{p}/clear_refs").write_text("5")
        except OSError:
            ok = False
    return ok


# -- one phase ----------------------------------------------------------------------------

@dataclass
class Tally:
    ok: int = 0
    error: int = 0
    unanswered: int = 0
    took_s: list[float] = field(default_factory=list)
    reasons: Counter[str] = field(default_factory=Counter)

    def add(self, took: float, status: int | None, body: bytes) -> None:
        self.took_s.append(took)
        if status is None:
            self.unanswered += 1
            self.reasons["no answer: " + body.decode(errors="replace")[:60]] += 1
            return
        reason = ""
        if status != 200:
            reason = f"HTTP {status}: {body[:60].decode(errors='replace')}"
        else:
            try:
                doc = json.loads(body)
            except ValueError:
                doc = {}
            if isinstance(doc, dict) and "error" in doc:
                reason = str(doc["error"])[:80]
        if reason:
            self.error += 1
            self.reasons[reason] += 1
        else:
            self.ok += 1


async def request(url: str, method: str, path: str, body: bytes,
                  timeout_s: float) -> tuple[int | None, bytes]:
    """One request on a connection of its own: (status, body), or (None, why)."""
    conn = Connection(url)
    try:
        return await asyncio.wait_for(conn.request(method, path, body), timeout_s)
    except (TimeoutError, OSError, HttpError, ValueError) as e:
        return None, (type(e).__name__ + f" {e}").encode()
    finally:
        conn.close()


async def neighbour(url: str, requests: int, start: float, end: float,
                    timeout_s: float) -> tuple[list[float], list[str]]:
    """Up to `requests` GETs of the cheap route, one every (end - start) / requests s,
    none started after `end`."""
    loop = asyncio.get_running_loop()
    gap = (end - start) / requests
    latencies: list[float] = []
    failures: list[str] = []
    for i in range(requests):
        due = start + (i + 0.5) * gap
        if due > loop.time():
            await asyncio.sleep(due - loop.time())
        if loop.time() > end:
            break
        t0 = time.perf_counter()
        status, body = await request(url, "GET", NEIGHBOUR, b"", timeout_s)
        latencies.append(time.perf_counter() - t0)
        if status != 200:
            failures.append(f"{status}: {body[:80].decode(errors='replace')}")
    return latencies, failures


async def hostile(url: str, actor: str, method: str, path: str, body: bytes, end: float,
                  timeout_s: float, tally: Tally) -> None:
    """One hostile client: the same request again and again until `end`."""
    loop = asyncio.get_running_loop()
    for _ in range(MAX_HOSTILE_REQUESTS):
        if loop.time() >= end:
            return
        t0 = time.perf_counter()
        status, answer = await request(url, method, f"/probe/{actor}{path}", body, timeout_s)
        tally.add(time.perf_counter() - t0, status, answer)


@dataclass
class Slow:
    opened: int = 0
    failed_to_open: int = 0
    closed_after_s: list[float] = field(default_factory=list)
    answers: Counter[str] = field(default_factory=Counter)
    bytes_sent: int = 0


async def slowloris(url: str, i: int, end: float, slow: Slow) -> None:
    """A request line, then a header one byte a second, never finished, until `end` or
    until the server closes the connection."""
    parts = urlsplit(url)
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    try:
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(parts.hostname, parts.port), 10)
    except (TimeoutError, OSError):
        slow.failed_to_open += 1
        return
    slow.opened += 1
    first = f"GET /probe/slow-{i}/now HTTP/1.1\r\nHost: {parts.netloc}\r\nX-Slow: "
    closed = asyncio.ensure_future(reader.read(4096))
    try:
        writer.write(first.encode())
        while loop.time() < end:
            done, _ = await asyncio.wait({closed}, timeout=min(1.0, max(0.0, end - loop.time())))
            if done:
                break
            writer.write(b"a")
            await writer.drain()
            slow.bytes_sent += 1
    except OSError:
        pass
    if closed.done() and not closed.cancelled() and closed.exception() is None:
        data = closed.result()
        slow.closed_after_s.append(loop.time() - t0)
        slow.answers[data.split(b"\r\n", 1)[0].decode(errors="replace") or "closed"] += 1
    elif not closed.done() and writer.is_closing():
        slow.closed_after_s.append(loop.time() - t0)
        slow.answers["reset"] += 1
    elif closed.done() and not closed.cancelled() and closed.exception() is not None:
        slow.closed_after_s.append(loop.time() - t0)
        slow.answers[type(closed.exception()).__name__] += 1
    closed.cancel()
    writer.close()
    with contextlib.suppress(OSError, asyncio.TimeoutError):
        await asyncio.wait_for(writer.wait_closed(), 2)


async def run_phase(server: BenchServer, name: str, duration_s: float, requests: int,
                    load: Callable[[float], list[Any]] | None,
                    timeout_s: float) -> dict[str, Any]:
    """The neighbour and `load(end)`'s coroutines for `duration_s`; the figures."""
    loop = asyncio.get_running_loop()
    pid = server.proc.pid
    reset_ok = reset_peak(pid)
    rss_peak_kib = status_kib(pid, "VmRSS")
    sampling = True

    async def sample() -> None:
        nonlocal rss_peak_kib
        while sampling:
            rss_peak_kib = max(rss_peak_kib, status_kib(pid, "VmRSS"))
            await asyncio.sleep(SAMPLE_S)

    sampler = asyncio.ensure_future(sample())
    start = loop.time()
    end = start + duration_s
    coros = load(end) if load else []
    tasks = [asyncio.ensure_future(c) for c in coros]
    latencies, failures = await neighbour(server.url, requests, start, end, timeout_s)
    await asyncio.gather(*tasks)
    took = loop.time() - start
    sampling = False
    await sampler
    hwm_kib = status_kib(pid, "VmHWM")
    rss_end_kib = status_kib(pid, "VmRSS")
    lat_us = [x * 1e6 for x in latencies]
    out: dict[str, Any] = {
        "neighbour_us": summary(lat_us) if lat_us else None,
        "neighbour_p99_us": sorted(lat_us)[int(len(lat_us) * 0.99)] if lat_us else None,
        "neighbour_failures": len(failures),
        "neighbour_failure_examples": failures[:5],
        "phase_s": took,
        "vm_hwm_mib": hwm_kib / 1024,
        "vm_hwm_reset": reset_ok,
        "vm_rss_sampled_max_mib": rss_peak_kib / 1024,
        "vm_rss_end_mib": rss_end_kib / 1024,
        "server_alive": server.proc.poll() is None,
    }
    print(f"  {name}: {len(lat_us)} neighbour requests in {took:.1f} s", flush=True)
    return out


def tally_figures(tally: Tally) -> dict[str, Any]:
    return {"ok": tally.ok, "error": tally.error, "unanswered": tally.unanswered,
            "took_us": summary([t * 1e6 for t in tally.took_s]) if tally.took_s else None,
            "reasons": dict(tally.reasons.most_common(4))}


def slow_figures(slow: Slow, count: int) -> dict[str, Any]:
    c = slow.closed_after_s
    return {"connections": count, "opened": slow.opened,
            "failed_to_open": slow.failed_to_open, "closed_by_server": len(c),
            "closed_after_s": {"median": statistics.median(c), "min": min(c),
                               "max": max(c)} if c else None,
            "answers": dict(slow.answers), "bytes_sent": slow.bytes_sent}


# -- the run --------------------------------------------------------------------------------

async def run(server: BenchServer, args: argparse.Namespace) -> dict[str, Any]:
    url = server.url
    timeout_s = WALL_BUDGET_MS / 1000 * 4 + 10
    actors = [f"hostile-{k}" for k in range(args.hostile)]
    for actor in [*actors, "neighbour"]:  # each actor made, and its instance warm
        await request(url, "GET", f"/probe/{actor}/now", b"", timeout_s)
    for _ in range(20):
        await request(url, "GET", NEIGHBOUR, b"", timeout_s)
    phases: dict[str, Any] = {}

    def add(name: str, figures: dict[str, Any]) -> bool:
        phases[name] = figures
        return bool(figures["server_alive"])

    alive = add("quiet", await run_phase(server, "quiet", args.phase_s, args.requests, None,
                                         timeout_s))
    for case, sql in SQL_CASES.items():
        if not alive:
            break
        tally = Tally()
        body = json.dumps({"sql": sql, "params": [], "durable": False}).encode()

        def sql_load(end: float, body: bytes = body, tally: Tally = tally) -> list[Any]:
            return [hostile(url, a, "POST", "/sql", body, end, timeout_s, tally)
                    for a in actors]

        f = await run_phase(server, case, args.phase_s, args.requests, sql_load, timeout_s)
        f["hostile"] = tally_figures(tally)
        alive = add(case, f)
    if alive:
        tally = Tally()

        def flood_load(end: float) -> list[Any]:
            return [hostile(url, a, "POST", FLOOD, b"", end, timeout_s, tally)
                    for a in actors]

        name = f"output flood: {FLOOD}"
        f = await run_phase(server, name, args.phase_s, args.requests, flood_load, timeout_s)
        f["hostile"] = tally_figures(tally)
        alive = add(name, f)
    if alive:
        slow = Slow()
        duration = max(args.phase_s, args.header_timeout_s + 3)

        def slow_load(end: float) -> list[Any]:
            return [slowloris(url, i, end, slow) for i in range(args.slow)]

        name = f"slowloris: {args.slow} connections"
        f = await run_phase(server, name, duration, args.requests, slow_load, timeout_s)
        f["slowloris"] = slow_figures(slow, args.slow)
        alive = add(name, f)
    if alive:
        add("quiet, after", await run_phase(server, "quiet, after", args.phase_s,
                                            args.requests, None, timeout_s))
    base = (phases["quiet"]["neighbour_us"] or {}).get("median")
    for f in phases.values():
        med = (f["neighbour_us"] or {}).get("median")
        f["x_quiet"] = med / base if med and base else None
    return phases


def report(phases: dict[str, Any], args: argparse.Namespace) -> None:
    print_table(f"hostile neighbours: the neighbour's GET /now, up to {args.requests} a phase "
                f"of {args.phase_s:g} s, while {args.hostile} other actors attack "
                f"(wall budget {WALL_BUDGET_MS} ms)",
                [(name, f["neighbour_us"]) for name, f in phases.items() if f["neighbour_us"]])
    print(f"\n  {'phase':<34} {'n':>4} {'fail':>4} {'p99':>10} {'x quiet':>8} "
          f"{'VmHWM':>9} {'VmRSS max':>10} {'ok/err/none':>13} {'hostile took':>21}")
    for name, f in phases.items():
        n = f["neighbour_us"]["n"] if f["neighbour_us"] else 0
        p99 = fmt_us(f["neighbour_p99_us"]) if f["neighbour_p99_us"] is not None else "-"
        x = f"{f['x_quiet']:.2f}x" if f["x_quiet"] else "-"
        h = f.get("hostile")
        counts = f"{h['ok']}/{h['error']}/{h['unanswered']}" if h else ""
        took = ""
        if h and h["took_us"]:
            took = f"{fmt_us(h['took_us']['median'])} (max {fmt_us(h['took_us']['max'])})"
        print(f"  {name:<34} {n:>4} {f['neighbour_failures']:>4} {p99:>10} {x:>8} "
              f"{f['vm_hwm_mib']:>5.0f} MiB {f['vm_rss_sampled_max_mib']:>6.0f} MiB "
              f"{counts:>13} {took:>21}" + ("" if f["server_alive"] else "  SERVER DIED"))
    for name, f in phases.items():
        h = f.get("hostile")
        if h and h["reasons"]:
            reasons = "; ".join(f"{k} ({v})" for k, v in h["reasons"].items())
            print(f"  {name}: {reasons}")
        s = f.get("slowloris")
        if s:
            after = s["closed_after_s"]
            when = (f", after {after['min']:.1f}..{after['max']:.1f} s (median "
                    f"{after['median']:.1f})" if after else "")
            print(f"  {name}: {s['opened']} opened, {s['closed_by_server']} closed by the "
                  f"server{when}; answers {s['answers']}")
        if f["neighbour_failures"]:
            print(f"  {name}: neighbour failures, e.g. {f['neighbour_failure_examples']}")
        if not f["vm_hwm_reset"]:
            print(f"  {name}: VmHWM could not be reset: it is the peak since the start")


def main(argv: list[str] | None = None) -> int:
    # Here, not at the top: bench.hostile_data imports this module's phases.
    from bench.hostile_data import SERVER_ARGS as DATA_SERVER_ARGS
    from bench.hostile_data import run_data_cases

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="short phases (a smoke run)")
    p.add_argument("--phase-s", type=float, default=None, help="each phase's length (10 s)")
    p.add_argument("--requests", type=int, default=None, help="neighbour requests a phase")
    p.add_argument("--hostile", type=int, default=None, help="hostile actors at once (4)")
    p.add_argument("--slow", type=int, default=100, help="slowloris connections")
    p.add_argument("--header-timeout-s", type=float, default=HEADER_TIMEOUT_DEFAULT_S,
                   help="the server's --header-timeout-s (default: the host's, 10)")
    p.add_argument("--data-only", action="store_true",
                   help="only the cases of host work over guest data (bench/hostile_data.py)")
    p.add_argument("--smoke", action="store_true", help=SMOKE_HELP + " (every phase, "
                   "0.5 s each, 1 hostile actor, 2 slow connections, a header timeout of 1 s)")
    args = p.parse_args(argv)
    if args.smoke:
        smoke_results()
        args.phase_s, args.requests, args.hostile, args.slow = 0.5, 4, 1, 2
        args.header_timeout_s = 1.0
    quick = args.quick
    args.phase_s = args.phase_s or (3.0 if quick else 10.0)
    args.requests = args.requests or (60 if quick else 200)
    args.hostile = args.hostile or (2 if quick else 4)
    extra = ["--wall-budget-ms", str(WALL_BUDGET_MS)]
    if args.header_timeout_s != HEADER_TIMEOUT_DEFAULT_S:
        extra += ["--header-timeout-s", f"{args.header_timeout_s:g}"]
    wasm = probe_wasm()
    # Compiled here, if it must be, so that the server only loads it from the cache: a
    # compile at its start would leave its memory in the quiet phase's RSS.
    load_component(make_engine(), wasm, COMPILED)
    load_before = os.getloadavg()
    phases: dict[str, Any] = {}
    alive, code = True, None
    if not args.data_only:
        server = BenchServer({"probe": wasm}, extra)
        try:
            phases = asyncio.run(run(server, args))
        finally:
            alive = server.proc.poll() is None
            code = server.proc.returncode
            if alive:
                server.close()
            remove_scratch()
    if alive:  # the cases of host work over guest data, on a server of their own
        try:
            data = run_data_cases(args)
        finally:
            remove_scratch()
        phases |= data
        alive = all(f["server_alive"] for f in data.values())
    report(phases, args)
    figures = {"config": {"wall_budget_ms": WALL_BUDGET_MS, "phase_s": args.phase_s,
                          "requests": args.requests, "hostile_actors": args.hostile,
                          "slow_connections": args.slow,
                          "header_timeout_s": args.header_timeout_s, "quick": quick,
                          "sql": SQL_CASES, "flood": FLOOD, "server_args": extra,
                          "data_server_args": DATA_SERVER_ARGS},
               "load_avg_before": load_before, "load_avg_after": os.getloadavg(),
               "server_alive": alive, "server_exit": code, "phases": phases}
    print(f"  load average before {load_before[0]:.2f}, after {os.getloadavg()[0]:.2f}")
    print(f"  saved {save('bench_hostile', figures)}")
    failed = sum(f["neighbour_failures"] for f in phases.values())
    if not alive:
        print(f"  the server died (exit {code})")
    return 0 if alive and not failed else 1


if __name__ == "__main__":
    raise SystemExit(main())
