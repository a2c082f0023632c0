"""bench_hostile's cases of host work over guest data (issue 36 items 1-4): each runs one
hostile actor's pattern while the neighbour is measured, as bench_hostile's phases are.

They run on a server of their own, whose settings are those the issue's cases were found
with: a wall budget of 10 s, `--sql-memory-mb 256 --memory-mb 128`, and tracing on
(`--otlp-endpoint` to a port of 127.0.0.1 where nothing listens: the spans are made and
read, and their export fails). It serves the probe (the neighbour, `probe/neighbour`)
and the hostile guest tests/guests/hostile_data.py, as class `hd` and as one class
`schema-K` per hostile client (so that each one's first on-init is its class's first).
Its own quiet phase comes first: the ratios are against it.

- item 1: POST /trim?n=80000&repeat=10, ten trims of 80,000 characters above U+FFFF;
- item 2: the first on-init of a class, TABLES CREATE TABLEs in one script (the class's
  schema image is learnt from it), then new actors of the class for the rest of the
  phase (at least ON_INIT_PHASE_S, so that the learning falls inside it);
- item 3: 32 rows of 32 MiB in one statement, one client, through sqlite.exec and through
  query-packed;
- item 4: a `_wk_wf` row whose run_id is not UTF-8, then the hostile clients all ask that
  actor for /now for the phase.

With --smoke, each case runs at its smallest (a few characters, rows and tables).
"""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path
from typing import Any

from wkhost.engine.components import load_component, make_engine

from bench.bench_hostile import MAX_HOSTILE_REQUESTS, Tally, request, run_phase, tally_figures
from bench.common import COMPILED, REPO, probe_wasm
from bench.server import BenchServer

WALL_BUDGET_MS = 10_000
SERVER_ARGS = ["--wall-budget-ms", str(WALL_BUDGET_MS), "--sql-memory-mb", "256",
               "--memory-mb", "128", "--otlp-endpoint", "http://127.0.0.1:9"]
TABLES = 3000
ON_INIT_PHASE_S = 12.0
TRIM = "/trim?n=80000&repeat=10"
ROWS = "/rows?n=32&kb=32768&mode="


def hostile_data_wasm() -> Path:
    from wkhost.engine.build import cached_build

    built: Path = cached_build(REPO / "tests" / "guests" / "hostile_data.py",
                               REPO / ".cache" / "components",
                               progress=lambda line: print(f"  [build] {line}", flush=True))
    return built


def start_server(hostile: int) -> BenchServer:
    wasm, probe = hostile_data_wasm(), probe_wasm()
    engine = make_engine()
    for w in (wasm, probe):  # compiled here, not in the server's quiet phase
        load_component(engine, w, COMPILED)
    actors = {"probe": probe, "hd": wasm} | {f"schema-{k}": wasm for k in range(hostile)}
    return BenchServer(actors, SERVER_ARGS)


def run_data_cases(args: argparse.Namespace) -> dict[str, Any]:
    """Start the cases' server, run them, stop it: the phases' figures."""
    server = start_server(args.hostile)
    try:
        return asyncio.run(run_cases(server, args))
    finally:
        if server.proc.poll() is None:
            server.close()


async def run_cases(server: BenchServer, args: argparse.Namespace) -> dict[str, Any]:
    """The quiet phase, then one phase per case; their figures, as bench_hostile's."""
    url, timeout_s = server.url, WALL_BUDGET_MS / 1000 * 3 + 30
    clients = [f"hostile-{k}" for k in range(args.hostile)]
    smoke = getattr(args, "smoke", False)  # each case at its smallest
    tables = 100 if smoke else TABLES
    trim = "/trim?n=1000&repeat=2" if smoke else TRIM
    rows = "/rows?n=2&kb=1024&mode=" if smoke else ROWS
    on_init_s = args.phase_s if smoke else max(args.phase_s, ON_INIT_PHASE_S)
    for path in ["/probe/neighbour/now", *(f"/hd/{a}/now" for a in clients)]:
        await request(url, "GET", path, b"", timeout_s)
    phases: dict[str, Any] = {}

    async def phase(name: str, loads: list[tuple[str, str]], duration_s: float,
                    first: list[tuple[str, str]] | None = None) -> bool:
        """`loads`: (method, path) each hostile client loops; `first`: its first
        request, before the loop."""
        tally = Tally()

        def load(end: float) -> list[Any]:
            return [_client(url, m, p, (first or [])[i:i + 1], end, timeout_s, tally)
                    for i, (m, p) in enumerate(loads)]

        f = await run_phase(server, name, duration_s, args.requests,
                            load if loads else None, timeout_s)
        if loads:
            f["hostile"] = tally_figures(tally)
        phases[name] = f
        return bool(f["server_alive"])

    cases = [
        ("data quiet", [], args.phase_s, None),
        ("data 1: trim 80,000 astral x10", [("POST", f"/hd/{a}{trim}") for a in clients],
         args.phase_s, None),
        (f"data 2: first on-init, {tables} tables",
         [("POST", f"/schema-{k}/tables-{tables}-{{j}}/now") for k in range(args.hostile)],
         on_init_s, [("POST", f"/schema-{k}/tables-{tables}/now") for k in range(args.hostile)]),
        ("data 3: 32 rows x 32 MiB, exec", [("POST", f"/hd/rows-0{rows}exec")],
         args.phase_s, None),
        ("data 3: 32 rows x 32 MiB, packed", [("POST", f"/hd/rows-0{rows}packed")],
         args.phase_s, None),
        ("data 4: non-UTF-8 _wk_wf, traced", [("GET", "/hd/wf-bad/now")] * args.hostile,
         args.phase_s, [("POST", "/hd/wf-bad/wf-bad")]),
    ]
    for name, loads, duration, first in cases:
        if not await phase(name, loads, duration, first):
            break
    base = (phases["data quiet"]["neighbour_us"] or {}).get("median")
    for f in phases.values():
        med = (f["neighbour_us"] or {}).get("median")
        f["x_quiet"] = med / base if med and base else None
    return phases


async def _client(url: str, method: str, path: str, first: list[tuple[str, str]],
                  end: float, timeout_s: float, tally: Tally) -> None:
    """`first`'s request, if any, then `path` again and again until `end` (its "{j}"
    numbered: a new actor each time), as bench_hostile's hostile clients do."""
    loop = asyncio.get_running_loop()
    for m, p in first:
        t0 = time.perf_counter()
        status, answer = await request(url, m, p, b"", timeout_s)
        tally.add(time.perf_counter() - t0, status, answer)
    for j in range(MAX_HOSTILE_REQUESTS):
        if loop.time() >= end:
            return
        t0 = time.perf_counter()
        status, answer = await request(url, method, path.format(j=j), b"", timeout_s)
        tally.add(time.perf_counter() - t0, status, answer)
