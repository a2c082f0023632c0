"""A group whose branches wait on slow requests: do their waits overlap?

    .venv/bin/python -m bench.bench_overlap [--runs 9] [--peer-runs 5] [--branches 20]
                                            [--wait-ms 200] [--quick] [--part serve|peers]

A site on 127.0.0.1 answers every request after `wait-ms` (and counts how many it held
at once). One workflow is a group of `branches` step branches, each one POST to the site,
timed from the start's request to the answer that the instance completed (a start that
waits, through a real `wkhost serve`; the guest is tests/guests/wf_overlap.py):
- serve: the branches as `async` functions (`await overlap.fetch`): they overlap; as
         plain functions (`http.fetch`), which take turns: the figure before overlap
         existed; and as child workflows, each one plain step (the other way to overlap:
         events of other actors, which run on threads of their own). The target: the
         async group under 2x its slowest branch (`wait-ms`).
- peers: the same group on each installed peer (bench/peers/: DBOS on SQLite, async
         steps gathered; Restate, `ctx.run` futures gathered), each step the same POST,
         in this same run.
Every figure is a median with min and max over `runs`; the ratios compare figures of
this run. Figures are saved to bench/results/overlap.json.
"""

from __future__ import annotations

import argparse
import http.server
import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from bench.bench_groups import Client, run_peer
from bench.common import REPO, SMOKE_HELP, fmt_us, remove_scratch, save, smoke_results, summary

CLS = "fan"
GUEST = REPO / "tests" / "guests" / "wf_overlap.py"
PARTS = ("serve", "peers")
TARGET = 2.0  # the async group's latency, in units of its slowest branch


class SlowSite:
    """Answers every request after `wait_s`; `peak`: the most it held at once."""

    def __init__(self, wait_s: float) -> None:
        self.wait_s, self.held, self.peak = wait_s, 0, 0
        self.lock = threading.Lock()

    def hold(self) -> None:
        with self.lock:
            self.held += 1
            self.peak = max(self.peak, self.held)
        time.sleep(self.wait_s)
        with self.lock:
            self.held -= 1


@contextmanager
def slow_site(wait_s: float) -> Iterator[tuple[str, SlowSite]]:
    site = SlowSite(wait_s)

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:  # noqa: N802
            self.rfile.read(int(self.headers.get("content-length") or 0))
            site.hold()
            try:
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")
            except OSError:  # the client went first
                pass

        def log_message(self, *args: object) -> None:
            pass

    class Server(http.server.ThreadingHTTPServer):
        # A backlog of 5 (the default) drops the SYNs of a burst of connections, which
        # then come a second later: every branch's connection must be taken at once.
        request_queue_size = 1024
        daemon_threads = True

    srv = Server(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}", site
    finally:
        srv.shutdown()
        srv.server_close()


def workloads(branches: int) -> dict[str, dict[str, Any]]:
    return {f"{branches} async branches (overlap)": {"n": branches, "after": False},
            f"{branches} plain branches (take turns)": {"n": branches, "after": False,
                                                        "sync": True},
            f"{branches} child workflows (other actors)": {"n": branches, "after": False,
                                                          "children": True}}


def bench_serve(runs: int, branches: int, wait_ms: int) -> dict[str, Any]:
    from wkhost.engine.build import cached_build

    from bench.server import BenchServer

    wasm = cached_build(GUEST, REPO / ".cache" / "components",
                        progress=lambda line: print(f"  [build] {line}", flush=True))
    out: dict[str, Any] = {}
    with slow_site(wait_ms / 1000) as (url, site):
        server = BenchServer({CLS: wasm}, ["--allow-http", url.split("//", 1)[1]])
        client = Client(server.url, server.token, cls=CLS)
        try:
            for name, inp in workloads(branches).items():
                samples, site.peak = [], 0
                for r in range(runs + 1):  # one warm-up run
                    id = f"{len(out)}-{r}"
                    us = client.run(id, {**inp, "url": url}, check=_check(branches))
                    if r >= 1:
                        samples.append(us)
                out[name] = {**summary(samples), "peak": site.peak}
        finally:
            client.close()
            server.close()
    return out


def _check(branches: int) -> Any:
    def ok(st: dict[str, Any]) -> bool:
        return st.get("output", {}).get("branches") == ["ok"] * branches
    return ok


def bench_peers(runs: int, branches: int, wait_ms: int) -> dict[str, Any]:
    from bench.peers import each_available

    figs: dict[str, Any] = {}
    with slow_site(wait_ms / 1000) as (url, _site):
        figs = each_available("overlap", lambda name: run_peer(
            name, ["--runs", str(runs), "--slow", url, "--branches", str(branches)]))
    return figs


def print_table(figs: dict[str, Any], branches: int, wait_ms: int) -> None:
    mine = figs.get("serve", {})
    peers = {k: v for k, v in figs.get("peers", {}).items() if "skipped" not in v}
    head = (f"  {'a group of step branches, each a POST held ' + str(wait_ms) + ' ms':<50}"
            f" {'median':>9} {'min':>9} {'max':>9} {'peak':>5} {'/slowest':>9}")
    for p in peers:
        head += f" {p:>9} {'ratio':>6}"
    print(f"\n{head}")
    peer_key = f"fan-out: {branches} slow calls"
    for name, s in mine.items():
        line = (f"  {name:<50} {fmt_us(s['median']):>9} {fmt_us(s['min']):>9} "
                f"{fmt_us(s['max']):>9} {s['peak']:>5} {s['median'] / 1000 / wait_ms:>8.2f}x")
        for f in peers.values():
            t = (f.get(peer_key) or {}).get("median")
            line += f" {fmt_us(t):>9} {s['median'] / t:>5.2f}x" if t else f" {'-':>9} {'-':>6}"
        print(line)
    fast = mine.get(next(iter(workloads(branches))), {}).get("median")
    if fast:
        met = fast / 1000 / wait_ms <= TARGET
        print(f"  target: the async group under {TARGET:.0f}x its slowest branch: "
              f"{'met' if met else 'NOT met'}")
    for p, f in figs.get("peers", {}).items():
        print(f"  {p}: {f.get('skipped') or f.get('version', '')}")


def run(parts: tuple[str, ...], runs: int, peer_runs: int, branches: int,
        wait_ms: int) -> dict[str, Any]:
    figs: dict[str, Any] = {"runs": runs, "peer_runs": peer_runs, "branches": branches,
                            "wait_ms": wait_ms}
    for part in parts:
        started = time.monotonic()
        print(f"  [overlap] {part} ...", flush=True)
        if part == "serve":
            figs["serve"] = bench_serve(runs, branches, wait_ms)
        elif part == "peers":
            figs["peers"] = bench_peers(peer_runs, branches, wait_ms)
        remove_scratch()
        print(f"  [overlap] {part} done in {time.monotonic() - started:.1f} s", flush=True)
    return figs


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=9, help="timed runs of each workload (9)")
    p.add_argument("--peer-runs", type=int, default=5, help="timed runs on each peer (5)")
    p.add_argument("--branches", type=int, default=20, help="the group's branches (20)")
    p.add_argument("--wait-ms", type=int, default=200,
                   help="how long the site holds each request (200)")
    p.add_argument("--quick", action="store_true", help="--runs 5 --peer-runs 3")
    p.add_argument("--part", action="append", choices=PARTS,
                   help="run only this part (repeatable); default: all")
    p.add_argument("--smoke", action="store_true",
                   help=SMOKE_HELP + " (--runs 1 --peer-runs 1 --branches 3 --wait-ms 50)")
    args = p.parse_args(argv)
    if args.quick:
        args.runs, args.peer_runs = 5, 3
    if args.smoke:
        smoke_results()
        args.runs, args.peer_runs, args.branches, args.wait_ms = 1, 1, 3, 50
    if args.runs < 1 or args.peer_runs < 1 or not 1 <= args.branches <= 64 \
            or args.wait_ms < 1:
        p.error("--runs and --peer-runs take 1 or more, --branches 1 to 64 (the requests "
                "an event may have in flight), --wait-ms 1 or more")
    os.environ.setdefault("PYTHONHASHSEED", "0")
    figs = run(tuple(args.part or PARTS), args.runs, args.peer_runs, args.branches,
               args.wait_ms)
    print_table(figs, args.branches, args.wait_ms)
    print(f"  saved {save('overlap', figs)}")
    return figs


if __name__ == "__main__":
    sys.exit(0 if main() else 1)

