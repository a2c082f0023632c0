"""Durable workflows: replay per position, a new durable step, throughput, 1 MiB, cold start.

    .venv/bin/python -m bench.bench_workflows [--repeats 9] [--quick] [--part NAME ...]

Parts (all by default, except `sleepers`, which `python -m bench` runs in a process of
its own so that its memory figure starts from a clean host):
- replay:     one on_alarm event that replays N recorded positions (N = 0, 100, 1,000,
              5,000), on a warm instance and on a fresh one, per position: the host's wall
              time of the whole event (its db query, the crossing, the guest's decode and
              replay, the alarm bookkeeping), the guest's share (the on-alarm call minus
              the time spent inside host functions), and the guest's fuel;
- step:       the end-to-end latency of one new durable step: the slope per step between
              a workflow of 10 and one of 50 steps, from its start request until the
              host has finished the event that completed it;
- throughput: three-step workflows started concurrently (one start request with
              `wait_ms`, which the host answers once the workflow has completed, with
              its output: like the peers' "run it and give me the result" calls) through
              a real `wkhost serve` on
              127.0.0.1, at concurrency 1, 8 and 32, served as by default and with
              `--reuse-instances` (two servers, their rounds alternated); and the synced
              writes (fsyncs) one such workflow costs, counted in-process;
- big:        a 1 MiB step result, recorded (the event that runs the step) and replayed
              (warm and fresh), each beside the same workflow with a 1-character result;
- cold:       a new actor's first event, a host restart (component from the cache) and
              the first event after it, and `wkhost serve` from exec to listening;
- sleepers:   S sleeping instances (10,000 by default) whose wake times are spread over
              60 s: the host's RSS beyond an idle host serving the same class (both read
              after a malloc_trim), and the wake lateness (the time a step recorded right
              after the sleep, minus its due time), also as its median by 5 s of due time.

The workload component is examples/bench/app.py (one workflow function, shaped by its
input). Every figure is a median with min and max over repeated runs; nothing here
asserts a speed. Figures are saved to bench/results/workflows.json.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import stat
import statistics
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import cbor2

from bench.common import (
    COMPILED,
    SMOKE_HELP,
    example_wasm,
    fmt_us,
    probe_saw,
    process_rss_mib,
    process_run_s,
    process_tree,
    remove_scratch,
    save,
    scratch_dir,
    smoke_results,
    summary,
)
from bench.httpload import Connection, HttpError, drive

if TYPE_CHECKING:
    from wkhost.types import ActorRef

WF = "wfbench"
PREFIX = "/wk-workflow/v1/"
CBOR = "application/cbor"
BIG = (1 << 20) - 2  # a str of this many ASCII chars encodes to exactly 1 MiB of JSON
LEVELS = (1, 8, 32)


def bench_wasm() -> Path:
    return example_wasm("bench")


# -- an in-process host with a probe of timings ---------------------------------------------

class _HostFnClock(threading.local):
    ns = 0
    calls: Counter[str]

    def __init__(self) -> None:
        self.calls = Counter()


HOSTFN = _HostFnClock()
FSYNCS = Counter[str]()


def _counted_sync(real: Callable[[int], None]) -> Callable[[int], None]:
    """os.fsync or os.fdatasync, counting each call by what it syncs: a WAL, a database
    file, a directory (the host's own syncs only: SQLite's are made in C)."""

    def counted(fd: int) -> None:
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            FSYNCS["dir"] += 1
        elif os.readlink(f"/proc/self/fd/{fd}").endswith("-wal"):
            FSYNCS["wal"] += 1
        else:
            FSYNCS["file"] += 1
        real(fd)

    return counted


def _count_syncs() -> None:
    """Count the host's fsyncs and fdatasyncs by what they sync (os-level: not the host's
    to report), once per process; it costs nanoseconds."""
    if getattr(_count_syncs, "done", False):
        return
    for name in ("fsync", "fdatasync"):
        setattr(os, name, _counted_sync(getattr(os, name)))
    _count_syncs.done = True  # type: ignore[attr-defined]


class Probe:
    """The host's Observer (wkhost.events.observe): for each guest call, its wall time,
    the time spent in host functions during it and the fuel it burnt; each host function
    timed and counted; finished alarm events counted, with their time."""

    def __init__(self) -> None:
        self.last_call: dict[str, Any] = {}
        self.last_by_export: dict[str, dict[str, Any]] = {}
        self.last_alarm_ns: dict[Any, int] = {}
        self._cond = threading.Condition()
        self._alarms: Counter[Any] = Counter()
        self._since_call = threading.local()

    def guest_call(self, ref: ActorRef, export: str, wall_ns: int, fuel: int) -> None:
        host_ns: int = getattr(self._since_call, "ns", 0)
        self._since_call.ns = 0
        self.last_call = {"export": export, "wall_ns": wall_ns, "host_ns": host_ns,
                          "fuel": fuel}
        self.last_by_export[export] = self.last_call

    def host_function(self, interface: str, name: str, ns: int) -> None:
        HOSTFN.ns += ns
        HOSTFN.calls[name] += 1
        self._since_call.ns = getattr(self._since_call, "ns", 0) + ns

    def event_ended(self, ref: ActorRef, kind: str, outcome: str, wall_ns: int) -> None:
        if kind != "alarm":
            return
        with self._cond:
            self.last_alarm_ns[ref] = wall_ns
            self._alarms[ref] += 1
            self._cond.notify_all()

    def alarm_count(self, ref: Any) -> int:
        with self._cond:
            return self._alarms[ref]

    def wait_alarm(self, ref: Any, seen: int, timeout: float) -> None:
        with self._cond:
            self._cond.wait_for(lambda: self._alarms[ref] > seen, timeout)

    def fired(self) -> int:
        """Alarm events ended, of every actor."""
        with self._cond:
            return sum(self._alarms.values())


def make_host(data: Path, **config: Any) -> Any:
    """A Host with a Probe as its observer (`host.probe`); the probe's alarm counts are
    the host's attributes too (`host.alarm_count`, `host.wait_alarm`), as other benches
    read them."""
    from wkhost.config import HostConfig
    from wkhost.core.host import Host

    _count_syncs()
    probe = Probe()
    host = Host(HostConfig(data_dir=data, cache_dir=COMPILED, **config), observer=probe)
    host.probe = probe  # type: ignore[attr-defined]
    for name in ("alarm_count", "wait_alarm", "last_by_export", "last_alarm_ns"):
        setattr(host, name, getattr(probe, name))
    host.add_class(WF, bench_wasm(), access="internal")
    host.start()
    return host


def wf_call(host: Any, ref: Any, route: str, msg: dict[str, Any]) -> dict[str, Any]:
    from wkhost.types import Request, Sender

    req = Request("POST", PREFIX + route, "", [("content-type", CBOR)], cbor2.dumps(msg))
    resp = host.request(ref, req, Sender.operator())
    doc: dict[str, Any] = cbor2.loads(resp.body)
    if resp.status != 200:
        raise RuntimeError(f"{route} answered {resp.status}: {doc}")
    return doc


def run_until(host: Any, ref: Any, states: tuple[str, ...], timeout: float = 300) -> dict[str, Any]:
    """Status, once the instance reaches one of `states`: checked after each of its alarm
    events (no polling)."""
    deadline = time.monotonic() + timeout
    while True:
        seen = host.alarm_count(ref)
        st = wf_call(host, ref, "status", {})
        if st["state"] in states:
            return st
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"{ref} stayed {st['state']}: {st.get('error')}")
        host.wait_alarm(ref, seen, left)


def alarm_event(host: Any, ref: Any) -> dict[str, float]:
    """One on_alarm event of `ref`, run now on this thread through the host's event path
    (slot, lock, instance, the guest's on-alarm, the alarm sync after it). It skips only
    the host's check that the alarm is due (the instance is sleeping on a far sleep)."""
    t0 = time.perf_counter_ns()
    err = host.alarms.run_now(ref, time.monotonic() + 60)
    wall = time.perf_counter_ns() - t0
    if err is not None:
        raise RuntimeError(f"on-alarm failed: {err}")
    c = host.probe.last_call
    probe_saw("guest call (the Probe, the host's observer)", len(c))
    probe_saw("host function call (the Probe, told by interfaces/linker.py)",
              sum(HOSTFN.calls.values()))
    return {"event_ns": wall, "call_ns": c["wall_ns"], "host_ns": c["host_ns"],
            "fuel": c["fuel"] or 0}


def _median_of(samples: list[dict[str, float]], key: str, per: float = 1.0,
               scale: float = 1e-3) -> dict[str, float]:
    return summary([s[key] * scale / per for s in samples])


# -- a. replay --------------------------------------------------------------------------------

def bench_replay(repeats: int, sizes: tuple[int, ...]) -> dict[str, Any]:
    data = scratch_dir("wkbench-replay-")
    host = make_host(data, cpu_budget_ms=10_000)  # the set-up runs 5,000 new steps at once
    out: dict[str, Any] = {}
    try:
        for n in sizes:
            ref = host.actor_ref(WF, f"replay-{n}")
            wf_call(host, ref, "start", {"input": {"n": n, "sleeping": True}})
            st = run_until(host, ref, ("waiting",))
            assert st["positions"] == n + 1, st
            for mode in ("warm", "fresh"):
                host.testing.always_fresh_instance = mode == "fresh"
                for _ in range(2):
                    alarm_event(host, ref)  # settle: the cache filled, or the instance dropped
                samples = [alarm_event(host, ref) for _ in range(repeats)]
                per = max(n, 1)
                guest = [{"g": s["call_ns"] - s["host_ns"]} for s in samples]
                out[f"{mode} n={n}"] = {
                    "event_us_per_pos": _median_of(samples, "event_ns", per),
                    "guest_us_per_pos": _median_of(guest, "g", per),
                    "hostfn_us_per_pos": _median_of(samples, "host_ns", per),
                    "fuel_per_pos": _median_of(samples, "fuel", per, scale=1.0),
                    "event_ms": _median_of(samples, "event_ns", scale=1e-6),
                }
            host.testing.always_fresh_instance = False
            st = wf_call(host, ref, "status", {})
            assert st["state"] == "waiting" and st["positions"] == n + 1, st
    finally:
        host.close()
    for mode in ("warm", "fresh"):
        big = [n for n in sizes if n >= 1000]
        if len(big) == 2:
            a, b = (out[f"{mode} n={n}"]["event_ms"]["median"] for n in big)
            out[f"{mode} marginal_us_per_pos"] = (b - a) * 1e3 / (big[1] - big[0])
    return out


# -- b. a new durable step ----------------------------------------------------------------------

def bench_step(repeats: int, fail_first: bool = False) -> dict[str, Any]:
    """A new step's cost: the slope between workflows of 10 and 50 steps. `fail_first`:
    each step fails its first attempt (a traceback, a log line, an event more) and
    returns on its second."""
    data = scratch_dir("wkbench-step-")
    host = make_host(data)
    totals: dict[int, list[float]] = {10: [], 50: []}
    slopes = []
    try:
        for r in range(repeats + 1):
            pair = {}
            for n in (10, 50):
                ref = host.actor_ref(WF, f"step-{n}-{r}")
                t0 = time.perf_counter_ns()
                wf_call(host, ref, "start", {"input": {"n": n, "fail_first": fail_first}})
                st = run_until(host, ref, ("completed", "failed"))
                pair[n] = (time.perf_counter_ns() - t0) / 1e3
                assert st["state"] == "completed" and st["output"] == {"steps": n}, st
            if r == 0:
                continue  # warm-up
            totals[10].append(pair[10])
            totals[50].append(pair[50])
            slopes.append((pair[50] - pair[10]) / 40)
    finally:
        host.close()
    return {"step_us": summary(slopes), "workflow_10_us": summary(totals[10]),
            "workflow_50_us": summary(totals[50])}


# -- c. three-step throughput ------------------------------------------------------------------

def count_synced_writes() -> dict[str, Any]:
    """Run one three-step workflow in-process as the throughput part does (one `start`
    with `wait_ms`, so the run happens in the start's event) and count what it syncs."""
    data = scratch_dir("wkbench-sync-")
    host = make_host(data)
    waiting_start = {"input": {"n": 3}, "wait_ms": 60_000}
    try:
        wf_call(host, host.actor_ref(WF, "sync-warmup"), "start", waiting_start)
        HOSTFN.calls.clear()
        before = FSYNCS.copy()
        st = wf_call(host, host.actor_ref(WF, _same_shard_as("sync-warmup")), "start",
                     waiting_start)
        # The start waited for every sync of its actor's first durable write, the new
        # file's too (they run on a thread of their own).
        synced = FSYNCS - before
        calls = dict(HOSTFN.calls)  # host functions called from the guest
    finally:
        host.close()
    probe_saw("fsync (the probe wraps os.fsync and os.fdatasync)", sum(synced.values()))
    probe_saw("host function call (the probe wraps interfaces/linker.py's guard)",
              sum(calls.values()))
    # SQLite's own syncs are not counted here: a new actor's first write skips them
    # (ActorDb.first_host_write), and a checkpoint's come once per 1,000 WAL pages.
    return {"fsyncs_per_workflow": sum(synced.values()), "wal_fsyncs": synced["wal"],
            "file_fsyncs": synced["file"], "directory_fsyncs": synced["dir"],
            "host_calls": calls,
            "state": st.get("state"), "output": st.get("output"),
            "why": [
                "finish: the output and state (exec-durable), before the answer reports "
                "them. The instance row with its input and run_id, the alarm, on-init's "
                "commit and the three step results, each committed as it came, ride on "
                "this one sync: the start that waits tells its client nothing before",
                "the new database file's content, once, off the event's path: the "
                "pages it has from the template (or its class's schema image) are in no "
                "WAL frame, and the frames need them",
                "the new database's directory, once, off the event's path too: the "
                "entries of the new file and of its WAL must survive what their frames "
                "survive",
            ]}


def _same_shard_as(actor_id: str) -> str:
    """An id whose database goes in the same directory as `actor_id`'s: in a host that
    has served a while, every one of the 256 directories exists, and a new one's own
    sync (once per directory) is not what a workflow costs."""
    from wkhost.storage.paths import db_path

    want = db_path(Path("."), WF, actor_id).parent
    return next(f"sync-count-{i}" for i in range(100_000)
                if db_path(Path("."), WF, f"sync-count-{i}").parent == want)


async def _load(url: str, token: str, concurrency: int, total: int, tag: str
                ) -> dict[str, float]:
    headers = {"Authorization": f"Bearer {token}"}
    polls = 0
    # One request per workflow: the host holds start's answer until the workflow has
    # completed (docs/concepts.md, held answers). Should 60 s run out, status asks again.
    start_body = cbor2.dumps({"input": {"n": 3}, "wait_ms": 60_000})
    status_body = cbor2.dumps({"wait_ms": 60_000})

    async def post(conn: Connection, path: str, body: bytes) -> dict[str, Any]:
        status, answer = await conn.request("POST", path, body, CBOR)
        doc: dict[str, Any] = cbor2.loads(answer)
        if status != 200:
            raise HttpError(f"{status}: {doc}")
        return doc

    async def one(conn: Connection, i: int) -> bool:
        nonlocal polls
        base = f"/{WF}/{tag}-{i}{PREFIX}"
        st = await post(conn, base + "start", start_body)
        while st.get("state") not in ("completed", "failed", "cancelled"):
            polls += 1
            st = await post(conn, base + "status", status_body)
        return bool(st.get("output") == {"steps": 3})

    result = await drive(url, headers, concurrency, total, one)
    return {**result.figures(total), "polls_per_wf": polls / total}


def bench_throughput(repeats: int, workflows: int, warmup: int = 200) -> dict[str, Any]:
    """Through four servers, side by side: one as served by default (each actor its own
    instance, `--processes auto`: one a core), the same in one process (the default
    before), one process with `--reuse-instances` (a new workflow's actor takes an
    instance another one let go), and that one in two processes (`--processes 2`). Their
    rounds alternate, so that all see the same machine."""
    from bench.server import BenchServer

    wasm = bench_wasm()
    out: dict[str, Any] = {}
    t0 = time.perf_counter()
    servers = {"isolated": BenchServer({WF: wasm}, ["--access", f"{WF}=internal",
                                                    "--processes", "auto"])}
    out["serve_start_ms"] = (time.perf_counter() - t0) * 1e3
    try:
        # The default before `--processes auto`: one process.
        servers["one_process"] = BenchServer({WF: wasm}, ["--access", f"{WF}=internal",
                                                          "--processes", "1"])
        servers["reused"] = BenchServer({WF: wasm}, ["--access", f"{WF}=internal",
                                                     "--reuse-instances", WF])
        # One process per core (host/partition.py): the same, on both GILs.
        servers["reused_2_processes"] = BenchServer(
            {WF: wasm}, ["--access", f"{WF}=internal", "--reuse-instances", WF,
                         "--processes", "2"])
        for name, server in servers.items():
            # Past the live cap (96 actors), so that new actors take reused instances as
            # they do in a host that has been serving for a while.
            asyncio.run(_load(server.url, server.token, 8, warmup, f"warmup-{name}"))
        for level in LEVELS:
            runs: dict[str, list[dict[str, float]]] = {name: [] for name in servers}
            for r in range(max(1, repeats)):
                for name, server in servers.items():
                    runs[name].append(asyncio.run(_load(
                        server.url, server.token, level, workflows, f"c{level}-r{r}-{name}")))
            for name, done in runs.items():
                fig = {"wf_per_s": summary([d["wf_per_s"] for d in done]),
                       "p50_ms": statistics.median(d["p50_ms"] for d in done),
                       "p99_ms": statistics.median(d["p99_ms"] for d in done),
                       "polls_per_wf": statistics.median(d["polls_per_wf"] for d in done),
                       "failures": sum(int(d["failures"]) for d in done)}
                if name == "isolated":
                    out[str(level)] = fig
                else:
                    out.setdefault(name, {})[str(level)] = fig
    finally:
        for server in servers.values():
            server.close()
    out["synced_writes"] = count_synced_writes()
    return out


# -- an idle server ------------------------------------------------------------------------------

def bench_idle(windows: int, window_s: float, workflows: int) -> dict[str, Any]:
    """`wkhost serve` of the bench's class as a new user runs it: its CPU a second and its
    RSS while nothing is asked, once just started and once after `workflows` workflows
    (the threads that work for events have started, and wait)."""
    from bench.server import BenchServer

    server = BenchServer({WF: bench_wasm()}, ["--access", f"{WF}=internal",
                                              "--processes", "auto"])
    pid = server.proc.pid

    def idle(label: str) -> dict[str, Any]:
        time.sleep(window_s)  # what the last requests left behind settles first
        rates = []
        for _ in range(windows):
            tree = process_tree(pid)  # the supervisor and its processes
            before = sum(process_run_s(p) for p in tree)
            time.sleep(window_s)
            rates.append((sum(process_run_s(p) for p in tree) - before) / window_s * 1e3)
        tree = process_tree(pid)
        return {"cpu_ms_per_s": summary(rates),
                "rss_mib": summary([sum(process_rss_mib(p) for p in tree)]),
                "processes": len(tree), "when": label}

    try:
        out = {"started": idle("just started")}
        asyncio.run(_load(server.url, server.token, 8, workflows, "idle-load"))
        out["after_load"] = idle(f"after {workflows} workflows")
    finally:
        server.close()
    return out


# -- d. a 1 MiB step result ---------------------------------------------------------------------

def bench_big(repeats: int) -> dict[str, Any]:
    data = scratch_dir("wkbench-big-")
    host = make_host(data)
    rec: dict[str, list[float]] = {"big": [], "small": []}
    refs: dict[str, Any] = {}
    try:
        for r in range(repeats + 1):
            for label, k in (("small", 1), ("big", BIG)):
                ref = refs[label] = host.actor_ref(WF, f"{label}-{r}")
                seen = host.alarm_count(ref)
                wf_call(host, ref, "start", {"input": {"big": k, "sleeping": True}})
                host.wait_alarm(ref, seen, 60)
                st = run_until(host, ref, ("waiting",))
                assert st["positions"] == 2, st
                if r:
                    rec[label].append(host.last_alarm_ns[ref] / 1e3)
        out: dict[str, Any] = {"record_event_us": summary(rec["big"]),
                               "record_small_event_us": summary(rec["small"]),
                               "record_delta_us": summary(
                                   [b - s for b, s in zip(rec["big"], rec["small"], strict=True)])}
        for mode in ("warm", "fresh"):
            host.testing.always_fresh_instance = mode == "fresh"
            got: dict[str, list[dict[str, float]]] = {}
            for label in ("small", "big"):
                for _ in range(2):
                    alarm_event(host, refs[label])
                got[label] = [alarm_event(host, refs[label]) for _ in range(repeats)]
            out[f"replay_{mode}_event_us"] = _median_of(got["big"], "event_ns")
            out[f"replay_{mode}_delta_us"] = summary(
                [(b["event_ns"] - s["event_ns"]) / 1e3
                 for b, s in zip(got["big"], got["small"], strict=True)])
            out[f"replay_{mode}_hostfn_us"] = _median_of(got["big"], "host_ns")
            out[f"replay_{mode}_guest_us"] = summary(
                [(b["call_ns"] - b["host_ns"]) / 1e3 for b in got["big"]])
        host.testing.always_fresh_instance = False
    finally:
        host.close()
    return out


# -- e. cold start ---------------------------------------------------------------------------

def bench_cold(repeats: int) -> dict[str, Any]:
    from wkhost.types import Request, Sender

    data = scratch_dir("wkbench-cold-")
    bench_wasm()
    first: list[float] = []
    restart: list[float] = []
    after: list[float] = []
    host = make_host(data)
    try:
        for r in range(repeats + 1):
            ref = host.actor_ref(WF, f"cold-{r}")
            t0 = time.perf_counter_ns()
            wf_call(host, ref, "start", {"input": {"n": 3}})
            if r:
                first.append((time.perf_counter_ns() - t0) / 1e3)
            run_until(host, ref, ("completed",))
    finally:
        host.close()
    for _ in range(repeats):
        gc.collect()
        t0 = time.perf_counter_ns()
        host = make_host(data)
        restart.append((time.perf_counter_ns() - t0) / 1e3)
        try:
            ref = host.actor_ref(WF, "cold-1")
            t0 = time.perf_counter_ns()
            resp = host.request(ref, Request("POST", PREFIX + "status", "",
                                             [("content-type", CBOR)], cbor2.dumps({})),
                                Sender.operator())
            after.append((time.perf_counter_ns() - t0) / 1e3)
            assert resp.status == 200
        finally:
            host.close()
    return {"new_actor_first_event_us": summary(first),
            "host_restart_us": summary(restart),
            "first_event_after_restart_us": summary(after)}


# -- f. sleeping instances ----------------------------------------------------------------------

def _rss_kib() -> int:
    """This process's RSS, once freed C heap is given back: a component compiled just
    before (no cached artifact yet) leaves hundreds of MiB free but resident, which made
    the idle host look bigger than the sleeping one."""
    from wkhost.runtime.memory import _malloc_trim

    gc.collect()
    if _malloc_trim is not None:
        _malloc_trim(0)
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def bench_sleepers(count: int, spread_s: float = 60.0, lead_s: float = 10.0,
                   tail_s: float = 5.0) -> dict[str, Any]:
    from concurrent.futures import ThreadPoolExecutor

    data = scratch_dir("wkbench-sleep-")
    host = make_host(data)
    try:
        idle_ref = host.actor_ref(WF, "idle")
        wf_call(host, idle_ref, "start", {"input": {"n": 1}})
        run_until(host, idle_ref, ("completed",))
        time.sleep(1)
        idle_rss = _rss_kib()

        def start(i: int, base: int) -> None:
            ref = host.actor_ref(WF, f"s-{i}")
            k = i - probe if i >= probe else 0
            wf_call(host, ref, "start",
                    {"input": {"wake_at": base + int(k * spread_s * 1000 / count)}})

        # Creation rate first, to place the wake times after the last creation.
        t0 = time.monotonic()
        probe = min(200, count)
        far = host.clock.now_ms() + 3_600_000
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda i: start(i, far + i), range(probe)))
        rate = probe / (time.monotonic() - t0)
        for i in range(probe):  # those 200 wake in an hour: cancel them, they are not counted
            wf_call(host, host.actor_ref(WF, f"s-{i}"), "cancel", {})
        base = host.clock.now_ms() + int((count / rate) * 1.5 * 1000 + lead_s * 1000)
        t0 = time.monotonic()
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda i: start(i, base), range(probe, count + probe)))
        created_s = time.monotonic() - t0
        # Let the runs that record the sleeps finish and the janitor evict idle instances.
        while host.scheduler.pending() < count + 1 and time.monotonic() - t0 < 600:
            time.sleep(0.5)
        wait = (base - host.clock.now_ms()) / 1000 - 1
        time.sleep(max(0.0, wait - 2))
        sleeping_rss = _rss_kib()
        # Wait for every wake (spread over `spread_s`), then read the outputs back.
        time.sleep(max(0.0, (base - host.clock.now_ms()) / 1000 + spread_s + tail_s))
        lateness = []
        by_window: dict[int, list[int]] = {}
        unfinished: Counter[str] = Counter()
        for i in range(probe, count + probe):
            st = wf_call(host, host.actor_ref(WF, f"s-{i}"), "status", {})
            if st["state"] != "completed":
                unfinished[st["state"]] += 1
                continue
            late = st["output"]["woke"] - st["output"]["due"]
            lateness.append(late)
            by_window.setdefault((st["output"]["due"] - base) // 5000, []).append(late)
        lateness.sort()
    finally:
        host.close()
    n = len(lateness)
    return {"count": count, "spread_s": spread_s, "created_per_s": count / created_s,
            "idle_rss_mib": idle_rss / 1024, "sleeping_rss_mib": sleeping_rss / 1024,
            "rss_beyond_idle_mib": (sleeping_rss - idle_rss) / 1024,
            "lateness_ms": {"p50": lateness[n // 2] if n else None,
                            "p99": lateness[int(n * 0.99)] if n else None,
                            "max": lateness[-1] if n else None},
            "unfinished": dict(unfinished), "live_instances_cap": host.config.max_live_instances,
            # When it misses: a backlog grows window after window, a stall shows in one.
            "median_lateness_ms_by_5s_of_due_time": [
                statistics.median(by_window[w]) for w in sorted(by_window)]}


def _drain_once(count: int, pool: bool, room_ms: int) -> dict[str, float]:
    """`count` sleepers due at one instant, every instance evicted: how fast does the host
    wake them all (each wake: open the db, instantiate, replay, one step, finish)?"""
    from concurrent.futures import ThreadPoolExecutor

    host = make_host(scratch_dir("wkbench-drain-"), instance_pool=pool)
    try:
        lead_ms = room_ms + count * 12  # room for creating them and their first runs
        due = host.clock.now_ms() + lead_ms
        with ThreadPoolExecutor(8) as workers:
            list(workers.map(lambda i: wf_call(host, host.actor_ref(WF, f"d-{i}"), "start",
                                               {"input": {"wake_at": due}}), range(count)))
        deadline = time.monotonic() + lead_ms / 1000
        while host.probe.fired() < count and time.monotonic() < deadline:
            time.sleep(0.05)  # every first run (which records the sleep) has finished
        if host.probe.fired() < count:
            raise RuntimeError("the sleepers' first runs did not finish before they were due")
        fired0 = host.probe.fired()
        time.sleep(max(0.0, (due - host.clock.now_ms()) / 1000))
        cpu0, t0 = time.process_time(), time.monotonic()
        while host.probe.fired() - fired0 < count and time.monotonic() - t0 < 300:
            time.sleep(0.01)
        elapsed, cpu = time.monotonic() - t0, time.process_time() - cpu0
    finally:
        host.close()
    return {"wakes_per_s": count / elapsed, "cpu_ms_per_wake": cpu / count * 1e3}


def bench_drain(repeats: int, count: int, room_ms: int = 15_000) -> dict[str, Any]:
    """Cold-wake capacity with and without the instance pool, alternated in one run."""
    runs: dict[str, list[dict[str, float]]] = {"pool": [], "no_pool": []}
    for _ in range(repeats):
        runs["pool"].append(_drain_once(count, True, room_ms))
        runs["no_pool"].append(_drain_once(count, False, room_ms))
    return {"count": count, **{
        name: {"wakes_per_s": summary([r["wakes_per_s"] for r in rs]),
               "cpu_ms_per_wake": summary([r["cpu_ms_per_wake"] for r in rs])}
        for name, rs in runs.items()}}


# -- the table --------------------------------------------------------------------------------

def rows(figs: dict[str, Any]) -> list[tuple[str, dict[str, float], str]]:
    """(what, summary, unit) rows for the table."""
    out: list[tuple[str, dict[str, float], str]] = []
    rp = figs.get("replay", {})
    for key, v in rp.items():
        if isinstance(v, dict) and "event_us_per_pos" in v:
            out.append((f"replay {key}: event / position", v["event_us_per_pos"], "us"))
            out.append((f"replay {key}: guest / position", v["guest_us_per_pos"], "us"))
    if "step" in figs:
        out.append(("new durable step (slope 10..50)", figs["step"]["step_us"], "us"))
    if "retry" in figs:
        out.append(("a step failing once, then returning", figs["retry"]["step_us"], "us"))
    for level in LEVELS:
        t = figs.get("throughput", {}).get(str(level))
        if t:
            out.append((f"three-step wf/s at concurrency {level}", t["wf_per_s"], "/s"))
        t = figs.get("throughput", {}).get("one_process", {}).get(str(level))
        if t:
            out.append(("  the same, one process", t["wf_per_s"], "/s"))
        t = figs.get("throughput", {}).get("reused", {}).get(str(level))
        if t:
            out.append(("  the same, instances reused", t["wf_per_s"], "/s"))
        t = figs.get("throughput", {}).get("reused_2_processes", {}).get(str(level))
        if t:
            out.append(("  the same, reused, 2 processes", t["wf_per_s"], "/s"))
    b = figs.get("big", {})
    for k in ("record_delta_us", "replay_warm_delta_us", "replay_fresh_delta_us"):
        if k in b:
            out.append((f"1 MiB result: {k.removesuffix('_us')}", b[k], "us"))
    for k, v in figs.get("cold", {}).items():
        out.append((f"cold: {k.removesuffix('_us')}", v, "us"))
    for v in figs.get("idle", {}).values():
        out.append((f"idle server ({v['when']}): CPU ms/s", v["cpu_ms_per_s"], " ms/s"))
        out.append((f"idle server ({v['when']}): RSS", v["rss_mib"], " MiB"))
    d = figs.get("drain", {})
    for name in ("pool", "no_pool"):
        if name in d:
            out.append((f"cold wakes/s, {d['count']} due at once ({name})",
                        d[name]["wakes_per_s"], "/s"))
            out.append((f"cold wake CPU ({name})",
                        {k: v * 1e3 if k != "n" else v
                         for k, v in d[name]["cpu_ms_per_wake"].items()}, "us"))
    return out


def print_rows(figs: dict[str, Any]) -> None:
    print(f"\n  {'what':<52} {'median':>11} {'min':>11} {'max':>11}")
    for name, s, unit in rows(figs):
        if unit == "us":
            cells = [fmt_us(s[k]) for k in ("median", "min", "max")]
        else:
            cells = [f"{s[k]:.1f}{unit}" for k in ("median", "min", "max")]
        print(f"  {name:<52} {cells[0]:>11} {cells[1]:>11} {cells[2]:>11}")


PARTS = ("replay", "step", "retry", "throughput", "big", "cold", "drain", "idle")


def run(parts: tuple[str, ...], repeats: int, quick: bool, sleepers: int,
        say: Callable[[str], None] = print, smoke: bool = False) -> dict[str, Any]:
    """Each part; `smoke`: every part once at the smallest sizes that still take each
    path of the full run (the replay's 5,000 positions too: they are cheap)."""
    figs: dict[str, Any] = {}
    sizes = (0, 100, 1000) if quick and not smoke else (0, 100, 1000, 5000)
    least = 1 if smoke else 3
    for part in parts:
        say(f"  [workflows] {part} ...")
        started = time.monotonic()
        if part == "replay":
            figs[part] = bench_replay(repeats, sizes)
        elif part == "step":
            figs[part] = bench_step(repeats)
        elif part == "retry":
            figs[part] = bench_step(max(least, repeats // 2), fail_first=True)
        elif part == "throughput":
            # At least 3 rounds: --quick's comparison judges a ratio by its spread.
            figs[part] = (bench_throughput(1, 10, warmup=10) if smoke else
                          bench_throughput(max(3, repeats // 3), 60 if quick else 200))
        elif part == "big":
            figs[part] = bench_big(max(least, repeats // 2))
        elif part == "cold":
            figs[part] = bench_cold(max(least, repeats // 2))
        elif part == "drain":
            figs[part] = (bench_drain(1, 10, room_ms=4_000) if smoke else
                          bench_drain(1 if quick else 3, 300 if quick else 1000))
        elif part == "idle":
            figs[part] = (bench_idle(1, 0.5, 10) if smoke else
                          bench_idle(3, 2.0 if quick else 5.0, 100 if quick else 300))
        elif part == "sleepers":
            figs[part] = (bench_sleepers(min(sleepers, 20), spread_s=2, lead_s=2, tail_s=2)
                          if smoke else bench_sleepers(sleepers))
        remove_scratch()
        say(f"  [workflows] {part} done in {time.monotonic() - started:.1f} s")
    return figs


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=9)
    p.add_argument("--quick", action="store_true", help="smaller sizes, fewer workflows")
    p.add_argument("--part", action="append", choices=(*PARTS, "sleepers"),
                   help="run only this part (repeatable); default: all but sleepers")
    p.add_argument("--sleepers", type=int, default=10_000)
    p.add_argument("--out", default="workflows", help="results file name (bench/results/)")
    p.add_argument("--smoke", action="store_true", help=SMOKE_HELP + " (--part sleepers: 20)")
    args = p.parse_args(argv)
    os.environ.setdefault("PYTHONHASHSEED", "0")
    if args.smoke:
        smoke_results()
        args.repeats = 1
    figs = run(tuple(args.part or PARTS), args.repeats, args.quick, args.sleepers,
               smoke=args.smoke)
    print_rows(figs)
    if "sleepers" in figs:
        print(f"  sleepers: {figs['sleepers']}")
    print(f"  saved {save(args.out, figs)}")
    return figs


if __name__ == "__main__":
    main()
