"""Continue-as-new: a loop of 100,000 steps that continues as new every 1,000.

    .venv/bin/python -m bench.bench_continue [--full] [--total 100000] [--real-total 20000]
        [--every 1000] [--repeats 9] [--part loop|single|native|baseline ...]

What it shows: an event of a long loop that continues as new replays only its own run's
positions, so its cost stays at the cost of a run of `every` positions however many runs
came before; and what one run of all the steps, never continued, costs an event instead.

Parts:
- loop:     the real component (tests/guests/wf_continue.py under an in-process Host,
            bench_workflows' probe host): one instance runs the steps (small dict
            results, as examples/bench/app.py), continuing as new after each `every`.
            Its first, middle and last runs hold after their steps (a wait for the event
            "go"); at each hold, on_alarm events that replay that run's positions are
            timed, warm (the live instance and its cached journal) and fresh (a new
            instance for every event, which reads the whole journal); then "go" is sent.
            Each event alternates with one of a second instance "alongside": `every`
            steps of the same class, held in its first run, never continued. Its
            figures, taken at the same moments, are the peer of every hold: this
            machine's speed drifts by a quarter over minutes, so the loop's runs are
            compared through their ratio to it. Also the loop's wall time (the holds'
            timings left out), its alarm events and runs.
- single:   the cost avoided: one instance runs the same steps in one run, never
            continuing, holds after them, and is timed the same way, beside its own
            instance alongside.
- native:   loop and single again on CPython with FakeHost (wkguest.workflow.testing):
            the same runner code without wasm or the host (whole events only).
- baseline: bench_workflows' replay workload (examples/bench/app.py: `every` steps and
            a far sleep), in this run: the same cost as that benchmark reports it.

Sizes. By default the real component runs 20,000 steps (20 runs; it holds at runs 1, 10
and 20), natively the whole 100,000 (100 runs; holds at 1, 50 and 100): under a minute
in all (45 s here, loaded). `--full` runs the real component at 100,000 as well: three
minutes on this machine (a new durable step costs 0.13-0.5 ms there, as loaded).

Every figure is a median with min and max over `repeats` events; the ratios compare
medians of this run. Neither DBOS nor Restate is run with continue-as-new here: the
peer is the instance alongside. The host runs with --cpu-budget-ms 10000, as
bench_workflows' replay does: a fresh replay of 100,000 positions in one event takes
more than the default 50 ms. Figures are saved to bench/results/continue.json.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.bench_workflows import WF, alarm_event, make_host, run_until, wf_call
from bench.common import (
    REPO,
    SMOKE_HELP,
    fmt_us,
    remove_scratch,
    save,
    scratch_dir,
    smoke_results,
    summary,
)

CLS = "wfcontinue"
GUEST = REPO / "tests" / "guests" / "wf_continue.py"
FAR = 10**12
PARTS = ("loop", "single", "native", "baseline")
Status = dict[str, Any]


def guest_wasm() -> Path:
    from wkhost.engine.build import cached_build

    path: Path = cached_build(GUEST, REPO / ".cache" / "components",
                              progress=lambda line: print(f"  [build] {line}", flush=True))
    return path


def holds(total: int, every: int) -> list[int]:
    """The runs that hold: the first, the middle and the last."""
    runs = -(-total // every)
    return sorted({1, (runs + 1) // 2, runs})


def looping(wf: Any, inp: Any) -> Any:
    """tests/guests/wf_continue.py's benchmark shape (its _loop), for FakeHost."""
    run = int(inp.get("run", 1))
    total, every = int(inp["total"]), int(inp["every"])
    first = (run - 1) * every
    for n in range(first, min(first + every, total)):
        wf.step("step", lambda n=n: {"order": f"ord-{n:06d}", "status": "charged", "n": n})
    if run in inp.get("hold", ()):
        wf.wait_for_event("go", FAR)
    if first + every < total:
        wf.continue_as_new({**inp, "run": run + 1})
    return {"steps": total, "runs": run}


# -- the two hosts -------------------------------------------------------------------------

class Real:
    """The component under bench_workflows' probe host, in this process."""

    def __init__(self) -> None:
        self.host = make_host(scratch_dir("wkbench-continue-"), cpu_budget_ms=10_000)
        self.host.add_class(CLS, guest_wasm(), access="internal")

    def call(self, oid: str, route: str, msg: dict[str, Any]) -> Status:
        return wf_call(self.host, self.host.actor_ref(CLS, oid), route, msg)

    def until(self, oid: str, pred: Callable[[Status], bool], timeout: float = 900) -> Status:
        """The status once `pred` holds: checked after each alarm event of `oid`."""
        ref = self.host.actor_ref(CLS, oid)
        deadline = time.monotonic() + timeout
        while True:
            seen = self.host.alarm_count(ref)
            st = self.call(oid, "status", {})
            if pred(st):
                return st
            if st["state"] in ("failed", "parked", "cancelled"):
                raise RuntimeError(f"{oid} is {st['state']}: {st.get('error')}")
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"{oid} stayed {st['state']} (run {st.get('runs')})")
            self.host.wait_alarm(ref, seen, left)

    def fresh(self, on: bool) -> None:
        self.host.testing.always_fresh_instance = on

    def replay(self, oid: str) -> dict[str, float]:
        """One on_alarm event of `oid`, timed: its wall time, the guest's share (µs)."""
        s = alarm_event(self.host, self.host.actor_ref(CLS, oid))
        return {"event_us": s["event_ns"] / 1e3,
                "guest_us": (s["call_ns"] - s["host_ns"]) / 1e3}

    def alarm_events(self, oid: str) -> int:
        return int(self.host.alarm_count(self.host.actor_ref(CLS, oid)))

    def close(self) -> None:
        self.host.close()


class Native:
    """The same runner on CPython: FakeHost, its fake clock, every due alarm fired."""

    def __init__(self) -> None:
        from wkguest.workflow import Config
        from wkguest.workflow.testing import FakeHost

        self.host = FakeHost()
        self.host.serve(CLS, looping, Config(retention_ms=3_600_000))
        self.events: dict[str, int] = {}

    def call(self, oid: str, route: str, msg: dict[str, Any]) -> Status:
        import cbor2

        status, body = self.host.call(CLS, oid, "POST", f"/wk-workflow/v1/{route}",
                                      cbor2.dumps(msg), sender="operator")
        doc: Status = cbor2.loads(body)
        if status != 200:
            raise RuntimeError(f"{route} answered {status}: {doc}")
        return doc

    def until(self, oid: str, pred: Callable[[Status], bool]) -> Status:
        self.events[oid] = self.events.get(oid, 0) + self.host.run_due(limit=10**6)
        st = self.call(oid, "status", {})
        if not pred(st):
            raise RuntimeError(f"{oid}: no alarm is due, and it is {st}")
        return st

    def fresh(self, on: bool) -> None:
        self.host.always_replay = on

    def replay(self, oid: str) -> dict[str, float]:
        t0 = time.perf_counter_ns()
        if not self.host.fire(CLS, oid):
            raise RuntimeError(f"{oid}: the replay event trapped")
        return {"event_us": (time.perf_counter_ns() - t0) / 1e3}

    def alarm_events(self, oid: str) -> int:
        return self.events.get(oid, 0)

    def close(self) -> None:
        pass


Host = Real | Native


# -- one part: an instance driven to its end, timed at its holds -----------------------------

def held(run: int) -> Callable[[Status], bool]:
    return lambda st: (st["state"] == "waiting" and "go" in st["waiting_for"]
                       and st["runs"] == run)


def replays(host: Host, oids: dict[str, tuple[str, int]], repeats: int) -> dict[str, Any]:
    """Timed on_alarm events of held instances ({label: (id, positions)}), warm then
    fresh, one of each instance in turn, so that all see the same moments."""
    out: dict[str, Any] = {label: {"positions": n} for label, (_, n) in oids.items()}
    for mode in ("warm", "fresh"):
        host.fresh(mode == "fresh")
        got: dict[str, list[dict[str, float]]] = {label: [] for label in oids}
        for _ in range(2):  # settle: the caches filled, or the instances dropped
            for oid, _n in oids.values():
                host.replay(oid)
        for _ in range(repeats):
            for label, (oid, _n) in oids.items():
                gc.collect()
                got[label].append(host.replay(oid))
        for label, samples in got.items():
            out[label][mode] = {k: summary([s[k] for s in samples]) for k in samples[0]}
    host.fresh(False)
    return out


def run_part(host: Host, oid: str, total: int, every: int, side_steps: int,
             repeats: int) -> dict[str, Any]:
    """`oid` runs `total` steps, `every` a run; at each hold, its replays beside those
    of an instance alongside (`side_steps` steps, one run, held)."""
    side = f"{oid}-alongside"
    host.call(side, "start", {"input": {"total": side_steps, "every": side_steps,
                                        "hold": [1]}})
    host.until(side, held(1))
    hold = holds(total, every)
    inp: dict[str, Any] = {"total": total, "every": every, "hold": hold}
    at: dict[str, Any] = {}
    wall = 0.0
    t0 = time.perf_counter()
    host.call(oid, "start", {"input": inp})
    for run in hold:
        st = host.until(oid, held(run))
        wall += time.perf_counter() - t0
        positions = st["positions"] - 1  # the steps; the wait for "go" is the last
        if positions != min(every, total - (run - 1) * every):
            raise RuntimeError(f"run {run} of {oid} holds after {positions} positions")
        at[str(run)] = replays(host, {"held": (oid, positions),
                                      "alongside": (side, side_steps)}, repeats)
        t0 = time.perf_counter()
        host.call(oid, "event", {"name": "go", "payload": None})
    st = host.until(oid, lambda s: s["state"] == "completed")
    wall += time.perf_counter() - t0
    want = {"steps": total, "runs": -(-total // every)}
    if st.get("output") != want:
        raise RuntimeError(f"{oid} completed with {st.get('output')}, not {want}")
    return {"wall_s": wall, "alarm_events": host.alarm_events(oid), "runs": st["runs"],
            "steps": total, "replay": at}


def bench(host: Host, parts: list[str], total: int, every: int,
          repeats: int) -> dict[str, Any]:
    try:
        return {part: run_part(host, part, total, every if part == "loop" else total, every,
                               repeats) for part in parts}
    finally:
        host.close()


def bench_baseline(every: int, repeats: int) -> dict[str, Any]:
    """bench_workflows' replay workload, `every` positions: its figures in this run."""
    host = make_host(scratch_dir("wkbench-continue-"), cpu_budget_ms=10_000)
    try:
        ref = host.actor_ref(WF, "baseline")
        wf_call(host, ref, "start", {"input": {"n": every, "sleeping": True}})
        run_until(host, ref, ("waiting",))
        out: dict[str, Any] = {"positions": every}
        for mode in ("warm", "fresh"):
            host.testing.always_fresh_instance = mode == "fresh"
            for _ in range(2):
                alarm_event(host, ref)
            samples = [alarm_event(host, ref) for _ in range(repeats)]
            out[mode] = {"event_us": summary([s["event_ns"] / 1e3 for s in samples])}
        return out
    finally:
        host.close()


# -- the table ------------------------------------------------------------------------------

def _med(f: dict[str, Any], mode: str) -> float:
    return float(f[mode]["event_us"]["median"])


Row = tuple[str, dict[str, float], int, str]  # what, event µs, positions, ratios


def rows(figs: dict[str, Any]) -> list[Row]:
    """Per-event replay at each hold, and of the single run, each with its ratio to the
    instance alongside (measured at the same moments) and to the first run."""
    out: list[Row] = []
    for where in ("real", "native"):
        f = figs.get(where, {})
        for mode in ("warm", "fresh"):
            loop = sorted(f.get("loop", {}).get("replay", {}).items(), key=lambda x: int(x[0]))
            first = loop[0][1]["held"] if loop else None
            for run, r in loop:
                h, side = r["held"], r["alongside"]
                note = f"{_med(h, mode) / _med(side, mode):.2f}x alongside"
                if h is not first and first is not None:
                    note += f", {_med(h, mode) / _med(first, mode):.2f}x run 1"
                out.append((f"{where} {mode}: loop, at run {run}", h[mode]["event_us"],
                            h["positions"], note))
            for r in f.get("single", {}).get("replay", {}).values():
                h, side = r["held"], r["alongside"]
                out.append((f"{where} {mode}: one run, no continue", h[mode]["event_us"],
                            h["positions"], f"{_med(h, mode) / _med(side, mode):.1f}x "
                            f"alongside ({side['positions']:,} positions)"))
            base = f.get("baseline")
            if base:
                out.append((f"{where} {mode}: bench_workflows' replay", base[mode]["event_us"],
                            base["positions"], ""))
    return out


def print_figures(figs: dict[str, Any]) -> None:
    print(f"\n  {'replay: one on_alarm event':<36} {'positions':>9} {'median':>10} "
          f"{'min':>10} {'max':>10} {'per pos':>9}  ratios (medians)")
    for name, s, n, note in rows(figs):
        print(f"  {name:<36} {n:>9,} {fmt_us(s['median']):>10} {fmt_us(s['min']):>10} "
              f"{fmt_us(s['max']):>10} {fmt_us(s['median'] / n):>9}  {note}")
    for where in ("real", "native"):
        for part in ("loop", "single"):
            f = figs.get(where, {}).get(part)
            if f:
                print(f"  {where} {part}: {f['steps']:,} steps in {f['runs']} run(s), "
                      f"{f['wall_s']:.1f} s wall ({fmt_us(f['wall_s'] * 1e6 / f['steps'])} a "
                      f"step), {f['alarm_events']:,} alarm events")


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--total", type=int, default=100_000,
                   help="steps in all, natively and with --full (%(default)s)")
    p.add_argument("--real-total", type=int, default=20_000,
                   help="steps in all in the real component, without --full (%(default)s)")
    p.add_argument("--full", action="store_true",
                   help="the real component at --total too (several minutes)")
    p.add_argument("--every", type=int, default=1000, help="steps per run (%(default)s)")
    p.add_argument("--repeats", type=int, default=9, help="timed events per figure")
    p.add_argument("--part", action="append", choices=PARTS,
                   help="run only this part (repeatable); default: all")
    p.add_argument("--smoke", action="store_true",
                   help=SMOKE_HELP + " (--total 40 --real-total 40 --every 10 --repeats 1)")
    args = p.parse_args(argv)
    if args.smoke:
        smoke_results()
        args.total = args.real_total = 40
        args.every, args.repeats = 10, 1
    for name in ("total", "real_total", "every", "repeats"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    if min(args.total, args.real_total) < args.every:
        p.error("--total and --real-total must be at least --every")
    return args


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse(argv)
    os.environ.setdefault("PYTHONHASHSEED", "0")
    size = {"real": args.total if args.full else min(args.total, args.real_total),
            "native": args.total}
    parts = args.part or list(PARTS)
    figs: dict[str, Any] = {"every": args.every, "repeats": args.repeats, "total": size}
    started = time.monotonic()
    plan = {"real": [p for p in parts if p in ("loop", "single")],
            "native": ["loop", "single"] if "native" in parts else []}
    for where, mine in plan.items():
        if not mine:
            continue
        print(f"  [continue] {where}: {', '.join(mine)}: {size[where]:,} steps, every "
              f"{args.every:,} ...", flush=True)
        t0 = time.monotonic()
        host: Host = Real() if where == "real" else Native()
        figs[where] = bench(host, mine, size[where], args.every, args.repeats)
        remove_scratch()
        print(f"  [continue] {where} done in {time.monotonic() - t0:.0f} s", flush=True)
        save("continue", figs)  # what is measured so far, should a later part fail
    if "baseline" in parts:
        figs.setdefault("real", {})["baseline"] = bench_baseline(args.every, args.repeats)
        remove_scratch()
    print(f"  [continue] done in {time.monotonic() - started:.0f} s")
    print_figures(figs)
    print(f"  saved {save('continue', figs)}")
    return figs


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
