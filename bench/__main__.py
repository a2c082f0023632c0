"""`python -m bench` (`make bench`): every benchmark in bench/, the peers, one table.

    .venv/bin/python -m bench [--quick | --smoke] [--baseline FILE] [--no-sleepers]
                              [--only workflows,peers,...]

Runs each installed peer (bench/peers: DBOS on SQLite, Restate) on the same workflow
workloads as wkhost, then each benchmark module of bench/ that exists (bench_core,
calibrate_fuel, bench_frontdoor, bench_conversion, bench_workflows, bench_hostile, ...,
bench_observe: what metrics and traces cost; bench_memory: the server's RSS through a
burst, with its memory budget and without; each in its own process, printing its own
table), then the 10,000-sleepers part of bench_workflows in a process of its own, then
the peers again: each peer's figures pool its runs from before and after wkhost's, so
that they span the same stretch of this machine's time (its speed drifts by a quarter
over minutes). A peer that is not installed
is skipped with one line (`make bench-peers` installs them). Then it prints one combined
table, wkhost beside each peer with the ratio and the issue's target, and writes
bench/results/latest.json. bench_hostile has no peer and no row there: its own table.

--quick: fewer repeats and sizes, its figures into .cache/bench-quick/ (bench/results/
keeps the last full run's), and each ratio printed beside the baseline's (latest.json,
or --baseline), flagged when it fell by more than this run's own spread (bench/compare.py);
the exit status is 2 when one did. --smoke (`make test`): each module's own --smoke, the
peers at the least, figures into a scratch directory; the comparison is printed and
judges nothing (a smoke run's figures measure nothing).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import (
    REPO,
    RESULTS,
    RESULTS_ENV,
    SCRATCH_ENV,
    fmt_us,
    results_dir,
    save,
    smoke_results,
)

QUICK_RESULTS = REPO / ".cache" / "bench-quick"

MODULES = ("bench_core", "calibrate_fuel", "bench_frontdoor", "bench_conversion",
           "bench_workflows", "bench_hostile", "bench_continue", "bench_groups", "bench_overlap",
           "bench_updates", "bench_json", "bench_listing", "bench_observe", "bench_memory",
           "bench_cluster", "bench_testkit")
LEVELS = (1, 8, 32)


def say(line: str) -> None:
    print(line, flush=True)


def run_module(module: str, args: list[str]) -> int:
    say(f"\n== {module} {' '.join(args)}")
    started = time.monotonic()
    code = subprocess.call([sys.executable, "-m", f"bench.{module}", *args], cwd=REPO)
    say(f"== {module}: exit {code} after {time.monotonic() - started:.0f} s")
    return code


def load(name: str, since: float) -> dict[str, Any] | None:
    path = results_dir() / f"{name}.json"
    if not path.is_file() or path.stat().st_mtime < since:
        return None
    doc: dict[str, Any] = json.loads(path.read_text())
    return doc


# -- the combined table -----------------------------------------------------------------------

def _med(x: Any) -> float | None:
    if isinstance(x, dict):
        v = x.get("median")
        return None if v is None else float(v)
    return None if x is None else float(x)


def table(wk: dict[str, Any], peers: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per workload: wkhost's figure, each peer's, the ratios and the target."""
    rows: list[dict[str, Any]] = []
    names = [p for p in ("dbos", "restate") if "skipped" not in peers.get(p, {"skipped": 1})]

    def row(what: str, unit: str, mine: Any, peer_key: Any = None, better: str = "lower",
            target: str = "", met: bool | None = None,
            theirs_by_name: dict[str, Any] | None = None) -> None:
        r: dict[str, Any] = {"workload": what, "unit": unit, "wkhost": mine,
                             "better": better, "target": target, "met": met}
        for p in names:
            theirs = peer_key(peers[p]) if peer_key else None
            if theirs_by_name is not None:
                theirs = theirs_by_name.get(p)
            r[p] = theirs
            m, t = _med(mine), _med(theirs)
            r[f"x_{p}"] = (m / t) if m is not None and t else None
        rows.append(r)

    step = wk.get("step", {}).get("step_us")
    if step:
        dbos = _med(peers.get("dbos", {}).get("step_us"))
        m = _med(step)
        row("new durable step (slope N=10..50)", "us", step, lambda p: p.get("step_us"),
            target="<= 0.1x DBOS", met=None if not dbos or m is None else m <= 0.1 * dbos)
    tp = wk.get("throughput", {})
    for c in LEVELS:
        dbos = _med(peers.get("dbos", {}).get("throughput", {}).get(str(c), {})
                    .get("wf_per_s"))
        rest = _med(peers.get("restate", {}).get("throughput", {}).get(str(c), {})
                    .get("wf_per_s"))
        for t, what in ((tp.get(str(c)), f"three-step workflows/s, concurrency {c}"),
                        (tp.get("one_process", {}).get(str(c)),
                         f"three-step workflows/s, concurrency {c}, one process"),
                        (tp.get("reused", {}).get(str(c)),
                         f"three-step workflows/s, concurrency {c}, instances reused"),
                        (tp.get("reused_2_processes", {}).get(str(c)),
                         f"three-step workflows/s, concurrency {c}, reused, 2 processes")):
            if not t:
                continue
            mine = t["wf_per_s"]
            met = None
            m = _med(mine)
            if m is not None and (dbos or rest):
                met = (not dbos or m >= 3 * dbos) and (not rest or m >= 1.2 * rest)
            row(what, "/s", mine,
                lambda p, c=c: p.get("throughput", {}).get(str(c), {}).get("wf_per_s"),
                better="higher", target=">= 3x DBOS, >= 1.2x Restate", met=met)
    sync = tp.get("synced_writes", {})
    if sync:
        row("  fsyncs per three-step workflow", "", sync.get("fsyncs_per_workflow"))
    rp = wk.get("replay", {})
    for n in (100, 1000, 5000):
        for mode in ("warm", "fresh"):
            f = rp.get(f"{mode} n={n}")
            if not f:
                continue
            per = f["event_us_per_pos"]
            target, met = "", None
            if n == 5000:
                limit = 1.5 if mode == "warm" else 2.5
                target = f"{'<' if mode == 'warm' else '<='} {limit} us/pos (ref. design 1.5)"
                met = per["median"] < limit if mode == "warm" else per["median"] <= limit
            row(f"replay, {mode}, {n} positions: event/pos", "us", per, target=target,
                met=met)
            row(f"replay, {mode}, {n} positions: guest/pos", "us", f["guest_us_per_pos"])
    big = wk.get("big", {})
    for key, what in (("record_delta_us", "1 MiB step result: recorded (extra vs 1 char)"),
                      ("replay_warm_delta_us", "1 MiB step result: replayed warm (extra)"),
                      ("replay_fresh_delta_us", "1 MiB step result: replayed fresh (extra)")):
        if key in big:
            m = _med(big[key])
            row(what, "us", big[key], target="<= 10 ms",
                met=None if m is None else m <= 10_000)
    cold = wk.get("cold", {})
    for key, what in (("new_actor_first_event_us", "cold start: new actor's first event"),
                      ("host_restart_us", "host restart (component from the cache)"),
                      ("first_event_after_restart_us", "first event after a restart")):
        if key in cold:
            row(what, "us", cold[key])
    for v in wk.get("idle", {}).values():
        row(f"idle server ({v['when']}): CPU a second", "us", _scaled(v["cpu_ms_per_s"], 1e3),
            target="< 1 ms/s", met=_med(v["cpu_ms_per_s"]) < 1.0)
        row(f"idle server ({v['when']}): RSS", "MiB", v["rss_mib"])
    mem = wk.get("memory")
    if mem and "budget" in mem:
        burst = f"a burst of {mem['workflows']:,} workflows (c={mem['concurrency']})"
        b, peers_mem = mem["budget"], mem.get("peers", {})
        peak = _med(b["peak_mib"])
        row(f"{burst}: peak RSS, --memory-budget 512", "MiB", b["peak_mib"],
            target="< 512 MB", met=None if peak is None else peak * 1.048576 < 512,
            theirs_by_name={p: f.get("peak_mib") for p, f in peers_mem.items()})
        row(f"{burst}: RSS {mem['idle_s']:g} s after it", "MiB", b["idle_mib"])
        row(f"{burst}: wf/s, --memory-budget 512", "/s", b["wf_per_s"], better="higher",
            theirs_by_name={p: f.get("wf_per_s") for p, f in peers_mem.items()})
        if "off" in mem:
            row(f"{burst}: peak RSS, no budget", "MiB", mem["off"]["peak_mib"])
    for what, f in wk.get("groups", {}).items():
        row(what, "x" if "target" in f else "us", f["wkhost"], target=f.get("target", ""),
            met=f.get("met"), theirs_by_name=f["peers"])
    if "serve_start_ms" in tp:
        row("`wkhost serve`: exec to listening", "us", tp["serve_start_ms"] * 1e3)
    sl = wk.get("sleepers")
    if sl:
        row(f"{sl['count']:,} sleepers: RSS beyond idle host", "MiB", sl["rss_beyond_idle_mib"],
            target="< 150 MB", met=sl["rss_beyond_idle_mib"] * 1.048576 < 150)
        for q in ("p50", "p99"):
            v = sl["lateness_ms"][q]
            row(f"{sl['count']:,} sleepers: wake lateness {q}", "us",
                None if v is None else v * 1e3,
                target="< 1 s" if q == "p99" else "",
                met=(v is not None and v < 1000) if q == "p99" else None)
    return rows


def _scaled(v: Any, k: float) -> Any:
    if isinstance(v, dict):
        return {key: x * k if key != "n" else x for key, x in v.items()}
    return v * k


def groups_rows(figs: dict[str, Any]) -> dict[str, Any]:
    """bench_groups' figures as the combined table's rows: through `wkhost serve`, the
    fan-out of 100 branches and the child's round trip, each beside the peers', with the
    round trip's target (<= 2x a three-step workflow)."""
    serve, peers = figs.get("serve", {}), figs.get("peers", {})
    out: dict[str, Any] = {}
    for key in serve:
        if key.startswith("fan-out") or key.startswith("child round trip"):
            out[key] = {"wkhost": serve[key],
                        "peers": {p: f.get(key) for p, f in peers.items()}}
    for label, r in figs.get("ratios", {}).items():
        if r.get("target") and r.get("wkhost") is not None:
            out[label] = {"wkhost": r["wkhost"], "peers": {p: r.get(p) for p in peers},
                          "target": f"<= {r['target']:g}x", "met": r["wkhost"] <= r["target"]}
    return out


def _cell(v: Any, unit: str) -> str:
    m = _med(v)
    if m is None:
        return "-"
    if unit == "us":
        return fmt_us(m)
    if unit == "/s":
        return f"{m:,.0f}/s"
    if unit == "MiB":
        return f"{m:,.1f} MiB"
    if unit == "x":
        return f"{m:.2f}x"
    return f"{m:g}"


def _range(v: Any, unit: str) -> str:
    if isinstance(v, dict) and "min" in v:
        return f"{_cell(v['min'], unit)}..{_cell(v['max'], unit)}"
    return ""


def print_table(rows: list[dict[str, Any]], peers: dict[str, Any]) -> None:
    names = [p for p in ("dbos", "restate") if "skipped" not in peers.get(p, {"skipped": 1})]
    wide = max([48, *(len(r["workload"]) for r in rows)])  # columns stay aligned
    tw = max([28, *(len(r["target"]) for r in rows)])
    head = f"  {'workload':<{wide}} {'wkhost':>10} {'(min..max)':>21}"
    for p in names:
        head += f" {p:>10} {'ratio':>7}"
    head += f"  {'target':<{tw}} met"
    say("\n== combined: wkhost beside each peer (medians; ratio = wkhost / peer)")
    say(head)
    for r in rows:
        line = (f"  {r['workload']:<{wide}} {_cell(r['wkhost'], r['unit']):>10} "
                f"{_range(r['wkhost'], r['unit']):>21}")
        for p in names:
            x = r.get(f"x_{p}")
            line += f" {_cell(r.get(p), r['unit']):>10} {(f'{x:.2f}x' if x else '-'):>7}"
        met = {True: "yes", False: "NO", None: ""}[r["met"]]
        line += f"  {r['target']:<{tw}} {met}"
        say(line)
    for p, f in peers.items():
        if "skipped" in f:
            say(f"  {p}: skipped: {f['skipped']}")
        else:
            say(f"  {p}: {f.get('version', '')}; {f.get('storage', '')}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="fewer repeats and sizes, figures "
                   "into .cache/bench-quick/, each ratio beside the baseline's")
    p.add_argument("--smoke", action="store_true", help="each module's --smoke (make test): "
                   "figures into a scratch directory, nothing about speed judged")
    p.add_argument("--baseline", type=Path, default=RESULTS / "latest.json",
                   help="the run --quick compares with (default: bench/results/latest.json)")
    p.add_argument("--no-sleepers", action="store_true", help="skip the 10,000 sleepers")
    p.add_argument("--sleepers", type=int, default=10_000)
    p.add_argument("--only", default="", help="comma list of modules and/or 'peers'")
    args = p.parse_args(argv)
    if args.quick and args.smoke:
        p.error("--quick or --smoke, not both")
    if args.smoke:
        smoke_results()
    elif args.quick and not os.environ.get(RESULTS_ENV):
        os.environ[RESULTS_ENV] = str(QUICK_RESULTS)
    only = {x.strip() for x in args.only.split(",") if x.strip()}
    scratch = tempfile.mkdtemp(prefix="wkbench-run-")
    os.environ[SCRATCH_ENV] = scratch  # every module's data, removed once all is measured
    try:
        return _run(args, only)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _run(args: argparse.Namespace, only: set[str]) -> int:
    started = time.time()
    codes: dict[str, int] = {}
    with_peers = not only or "peers" in only
    bracketed = with_peers and only != {"peers"}  # wkhost runs too: peers before and after
    repeats, workflows = (3, 60) if args.quick else (7, 200)
    if args.smoke:
        repeats, workflows = 1, 4
    peers_before: dict[str, Any] = {}
    if bracketed:
        from bench.peers import run_peers

        repeats = (repeats + 1) // 2  # each half: together about as many runs as one

        say("\n== peers, first half (the second runs after wkhost's workloads)")
        peers_before = run_peers(repeats, workflows, say=say)
    for module in MODULES:  # each writes its figures where results_dir() says (the env)
        if only and module not in only:
            continue
        if not (REPO / "bench" / f"{module}.py").is_file():
            say(f"== {module}: not present, skipped")
            continue
        extra: list[str] = []
        if args.smoke:
            extra = ["--smoke"]
        elif module == "bench_workflows":
            extra = ["--out", "workflows"] + (["--quick", "--repeats", "3"] if args.quick else [])
        elif args.quick and module in ("bench_core", "calibrate_fuel", "bench_conversion"):
            extra = ["--repeats", "3"]
        elif args.quick and module == "bench_frontdoor":
            extra = ["--requests", "300", "--repeats", "1"]
        elif args.quick and module == "bench_testkit":
            extra = ["--tests", "50"]
        elif args.quick and module == "bench_listing":  # creating 10,000 takes minutes
            extra = ["--instances", "2000", "--quick"]
        elif args.quick and module in ("bench_hostile", "bench_groups", "bench_observe",
                                        "bench_memory", "bench_cluster"):
            extra = ["--quick"]
        codes[module] = run_module(module, extra)
    wk = (load("workflows", started) or {}).get("figures", {})
    groups = (load("groups", started) or {}).get("figures")
    if groups:
        wk["groups"] = groups_rows(groups)
    memory = (load("memory", started) or {}).get("figures")
    if memory:
        wk["memory"] = memory
    if not args.no_sleepers and (not only or "sleepers" in only or "bench_workflows" in only):
        count = 1000 if args.quick else args.sleepers
        codes["sleepers"] = run_module("bench_workflows", [
            "--part", "sleepers", "--sleepers", str(count), "--out", "sleepers",
            *(["--smoke"] if args.smoke else [])])
        sl = (load("sleepers", started) or {}).get("figures", {}).get("sleepers")
        if sl:
            wk["sleepers"] = sl
    peers: dict[str, Any] = {}
    if with_peers:
        from bench.peers import merge, run_peers

        say("\n== peers, second half" if bracketed else "\n== peers (same workloads)")
        peers = run_peers(repeats, workflows, say=say)
        if bracketed:
            peers = {name: merge(peers_before.get(name, {"skipped": "not run"}), figures)
                     for name, figures in peers.items()}
    rows = table(wk, peers)
    print_table(rows, peers)
    modules = {}
    # bench_hostile has no peer (no peer runs guest SQL): its table is its own, and its
    # figures go into latest.json beside the other modules', not into the combined table.
    for name in ("core", "fuel", "frontdoor", "conversion", "bench_hostile", "observe",
                 "cluster"):
        doc = load(name, started)
        if doc:
            modules[name] = doc["figures"]
    path = save("latest", {"combined": rows, "workflows": wk, "peers": peers,
                           "modules": modules, "exit_codes": codes})
    say(f"\n  saved {path}")
    failed = not all(c == 0 for c in codes.values())
    fell = 0
    if args.quick or args.smoke:
        fell = _compare(rows, args.baseline)
    if failed:
        return 1
    return 2 if fell and args.quick else 0


def _compare(rows: list[dict[str, Any]], baseline: Path) -> int:
    """The ratios beside the baseline's (bench/compare.py): how many fell past the spread."""
    from bench.compare import changes, load_baseline, report

    if not baseline.is_file():
        say(f"\n  no baseline at {baseline}: nothing to compare with")
        return 0
    before, when = load_baseline(baseline)
    return report(changes(rows, before), f"{baseline} ({when})", say=say)


if __name__ == "__main__":
    sys.exit(main())
