"""Memory under a budget: a burst of three-step workflows, the server's RSS through it.

    .venv/bin/python -m bench.bench_memory [--repeats 3] [--workflows 1300] [--idle-s 60]
                                           [--quick | --smoke] [--no-peers]
                                           [--only budget,off] [--serve-arg ARG ...]

Each round starts a fresh default `wkhost serve` (examples/bench's workflow class, as
bench_workflows serves it; `--processes auto`, the default), drives a burst of W
three-step workflows at concurrency 32 through it (bench/httpload.py: one start request
each, answered once the workflow has completed), leaves it idle for --idle-s seconds,
then drives a second burst. The RSS of the server's processes together (the supervisor
and each process) is read from /proc every 50 ms: its peak in each burst, what it holds
at the end of the idle time and how soon it came down to that; and each burst's wf/s.
Two servers: with the default `--memory-budget` (512 MB) and with `--memory-budget 0`
(no budget). `--serve-arg` adds to both (`--serve-arg=--processes --serve-arg=1`: one
process).

The peers (bench/peers: DBOS on SQLite, Restate; when installed) run the same burst in
their own scripts (`--levels 32 --repeats 1`): the peak RSS of the script's whole
process tree (for Restate, the SDK's process and restate-server), which holds each
peer's client too, and its wf/s.

Each figure is a median with min and max over the rounds; nothing here asserts a speed.
Figures are saved to bench/results/memory.json.
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.common import (
    REPO,
    SMOKE_HELP,
    remove_scratch,
    save,
    smoke_results,
    summary,
)

MiB = 1 << 20
_PAGE = os.sysconf("SC_PAGE_SIZE")
CONCURRENCY = 32
# The default server as a user runs it (bench/server.py's BenchServer asks for one
# process unless told): `--processes auto`, one process a core.
SERVERS = {"budget": ["--processes", "auto"],
           "off": ["--processes", "auto", "--memory-budget", "0"]}


def tree_rss(pid: int) -> int:
    """RSS in bytes of `pid` and every process under it (0 once it is gone)."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/statm", "rb") as f:
                total += int(f.read().split()[1]) * _PAGE
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo += [int(c) for c in f.read().split()]
        except (OSError, ValueError):
            continue
    return total


class Sampler:
    """The peak of tree_rss(pid), read every 50 ms on a thread of its own."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak = 0
        self.last = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            self.last = tree_rss(self.pid)
            self.peak = max(self.peak, self.last)

    def restart_peak(self) -> None:
        self.peak = self.last

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.peak


def _burst(server: Any, workflows: int, tag: str) -> dict[str, float]:
    from bench.bench_workflows import _load

    return asyncio.run(_load(server.url, server.token, CONCURRENCY, workflows, tag))


def wkhost_round(wasm: Path, extra: list[str], workflows: int, idle_s: float
                 ) -> dict[str, float]:
    """One fresh server: a burst, the idle time, a second burst."""
    from bench.bench_workflows import WF
    from bench.server import BenchServer

    server = BenchServer({WF: wasm}, ["--access", f"{WF}=internal", *extra])
    try:
        sampler = Sampler(server.proc.pid)
        time.sleep(0.5)
        before = tree_rss(server.proc.pid)
        sampler.restart_peak()
        first = _burst(server, workflows, "first")
        peak = sampler.peak
        after_burst = tree_rss(server.proc.pid)
        back_within = _idle(server.proc.pid, idle_s)
        idle_rss = tree_rss(server.proc.pid)
        sampler.restart_peak()
        second = _burst(server, workflows, "second")
        second_peak = sampler.stop()
    finally:
        server.close()
        remove_scratch()
    return {"rss_before_mib": before / MiB, "peak_mib": peak / MiB,
            "after_burst_mib": after_burst / MiB, "idle_mib": idle_rss / MiB,
            "back_within_s": back_within, "second_peak_mib": second_peak / MiB,
            "wf_per_s": first["wf_per_s"], "second_wf_per_s": second["wf_per_s"],
            "failures": int(first["failures"] + second["failures"])}


def _component() -> Path:
    """The workload's component, built once and copied aside, so that every round
    serves the same one (a guest SDK edited meanwhile would make a new build), and a
    server started and stopped with it: the rounds load it compiled, where a
    compilation's heap would be in a round's RSS before its burst."""
    from bench.bench_workflows import WF, bench_wasm
    from bench.server import BenchServer

    # Not a scratch_dir: each round removes those as it ends.
    wasm = Path(tempfile.mkdtemp(prefix="wkbench-memory-")) / "bench.wasm"
    atexit.register(shutil.rmtree, wasm.parent, True)
    shutil.copyfile(bench_wasm(), wasm)
    BenchServer({WF: wasm}, ["--access", f"{WF}=internal"]).close()
    return wasm


def _idle(pid: int, idle_s: float) -> float:
    """Wait `idle_s`; how many seconds in the RSS came down for good: the first time it
    was within 16 MiB of what it holds at the end (a used process keeps more than it
    started with: code it ran, caches, so the start is not where it comes back to)."""
    t0 = time.monotonic()
    series: list[tuple[float, int]] = []
    while (waited := time.monotonic() - t0) < idle_s:
        series.append((waited, tree_rss(pid)))
        time.sleep(0.5)
    end = tree_rss(pid)
    return next((t for t, rss in series if rss <= end + 16 * MiB), idle_s)


def peer_round(name: str, workflows: int) -> dict[str, Any]:
    """The peer's script on the same burst: the peak RSS of its process tree, its wf/s."""
    from bench.peers import HERE, RESTATE_SERVER, VENV_PY

    cmd = [str(VENV_PY), str(HERE / f"{name}_peer.py"), "--repeats", "1",
           "--workflows", str(workflows), "--levels", str(CONCURRENCY)]
    if name == "restate":
        cmd += ["--server", str(RESTATE_SERVER)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True, cwd=REPO)
    sampler = Sampler(proc.pid)
    out, _ = proc.communicate(timeout=900)
    peak = sampler.stop()
    lines = [ln for ln in out.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"{name} exited {proc.returncode}")
    doc = json.loads(lines[-1])
    t = doc["throughput"][str(CONCURRENCY)]
    return {"peak_mib": peak / MiB, "wf_per_s": t["wf_per_s"]["median"],
            "failures": int(t["failures"])}


def _pool(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    keys = [k for k in rounds[0] if k != "failures"]
    out: dict[str, Any] = {k: summary([r[k] for r in rounds]) for k in keys}
    out["failures"] = sum(r["failures"] for r in rounds)
    return out


def run(only: tuple[str, ...], repeats: int, workflows: int, idle_s: float,
        peers: bool) -> dict[str, Any]:
    figs: dict[str, Any] = {"workflows": workflows, "concurrency": CONCURRENCY,
                            "idle_s": idle_s}
    rounds: dict[str, list[dict[str, Any]]] = {name: [] for name in only}
    wasm = _component()
    for r in range(repeats):  # the servers' rounds alternate: both see the same machine
        for name in only:
            print(f"  [memory] {name} round {r + 1} ...", flush=True)
            rounds[name].append(wkhost_round(wasm, SERVERS[name], workflows, idle_s))
            print(f"    {rounds[name][-1]}", flush=True)
    for name, done in rounds.items():
        figs[name] = _pool(done)
    if peers:
        figs["peers"] = _peers(workflows)
    return figs


def _peers(workflows: int) -> dict[str, Any]:
    from bench.peers import each_available

    return each_available("peers", lambda name: peer_round(name, workflows),
                          (RuntimeError, subprocess.TimeoutExpired))


def print_rows(figs: dict[str, Any]) -> None:
    print(f"\n  burst of {figs['workflows']} three-step workflows at concurrency "
          f"{figs['concurrency']}, then {figs['idle_s']:g} s idle, then the burst again")
    print(f"  {'what':<46} {'median':>10} {'min':>10} {'max':>10}")
    for name in SERVERS:
        if name not in figs:
            continue
        label = "budget 512 MB" if name == "budget" else "no budget"
        for key, what, unit in (("peak_mib", "peak RSS", "MiB"),
                                ("idle_mib", "RSS after the idle time", "MiB"),
                                ("back_within_s", "given back within", "s"),
                                ("second_peak_mib", "second burst's peak RSS", "MiB"),
                                ("wf_per_s", "wf/s", "/s")):
            s = figs[name][key]
            print(f"  {label + ': ' + what:<46} " + " ".join(
                f"{s[k]:>7.1f}{unit:<3}" for k in ("median", "min", "max")))
    if "budget" in figs and "off" in figs:
        b, o = figs["budget"], figs["off"]
        print(f"  budget / none: peak {b['peak_mib']['median'] / o['peak_mib']['median']:.2f}x,"
              f" wf/s {b['wf_per_s']['median'] / o['wf_per_s']['median']:.2f}x")
    for name, p in figs.get("peers", {}).items():
        if "peak_mib" not in p:
            continue
        line = f"  {name}: peak RSS {p['peak_mib']:.0f} MiB, {p['wf_per_s']:.1f} wf/s"
        if "budget" in figs:
            line += f"; wkhost (budget) / {name}: peak " \
                    f"{figs['budget']['peak_mib']['median'] / p['peak_mib']:.2f}x"
        print(line)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--workflows", type=int, default=1300)
    p.add_argument("--idle-s", type=float, default=60.0)
    p.add_argument("--only", default=",".join(SERVERS),
                   help="the servers to run, of: " + ", ".join(SERVERS))
    p.add_argument("--no-peers", action="store_true", help="skip DBOS and Restate")
    p.add_argument("--serve-arg", action="append", default=[], metavar="ARG",
                   help="one more argument for every server (repeatable), to try a setting")
    p.add_argument("--quick", action="store_true", help="one round, no peers")
    p.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    args = p.parse_args(argv)
    os.environ.setdefault("PYTHONHASHSEED", "0")
    only = tuple(n for n in args.only.split(",") if n)
    for name in only:
        SERVERS[name] = [*SERVERS[name], *args.serve_arg]
    if args.quick:
        args.repeats, args.no_peers = 1, True
    if args.smoke:
        smoke_results()
        args.repeats, args.workflows, args.idle_s, args.no_peers = 1, 20, 1.0, True
    figs = run(only, args.repeats, args.workflows, args.idle_s, not args.no_peers)
    print_rows(figs)
    print(f"  saved {save('memory', figs)}")
    return figs


if __name__ == "__main__":
    main()
