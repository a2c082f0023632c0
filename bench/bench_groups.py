"""Groups and children: a fan-out of 100 branches in one instance, a child's round trip.

    .venv/bin/python -m bench.bench_groups [--runs 25] [--peer-runs 5] [--branches 100]
                                           [--quick] [--part syncs|serve|peers ...]

The component is tests/guests/wf_bench_groups.py, served under two class names
(`wfgroups`, and `wfgroupchild` for the children), so a parent and its child are
instances of two classes of one host. Parts:
- syncs: in-process (bench_workflows' probe host), every WAL fsync of one workload
         counted, with the event it happened in and the durable statement that asked
         for it (its /*wk:...*/ tag), for: a fan-out of `branches` step branches in one
         `wf.all`, and `branches` sequential steps, each started as a client does
         (the start answers at once, the run is the alarm's) and as a start that waits
         (the first run in the start's own event); and a child's round trip. Each sync
         is printed with the reason it is there; and a fan-out of 1000 (the most a
         group takes), which still fits in one event.
- serve: through a real `wkhost serve` on 127.0.0.1 with both classes (`--actor
         wfgroups=... --actor wfgroupchild=...`): the latency of one start that waits
         (`wait_ms`: the host answers once the instance has completed), from the
         request to the answer, for a three-step workflow, a parent whose child runs
         the same three steps (parent start, child start, the child's run, its notice,
         the parent resuming and finishing), the fan-out and the sequential steps. The
         workloads take turns within each round, so they see the same machine.
- peers: the same four workloads on each installed peer (bench/peers/: DBOS on SQLite,
         Restate), in this same run: their fan-out as they write one (DBOS: async steps
         gathered in an async workflow; Restate: `ctx.run` futures gathered), their
         child as a child workflow (DBOS.start_workflow in a workflow; Restate: a call
         to another service's handler).

Every figure is a median with min and max over `runs` (the peers' over `peer-runs`:
DBOS's fan-out takes about a second); the ratios compare figures of
this run. Figures are saved to bench/results/groups.json.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import cbor2

from bench.bench_workflows import make_host, run_until, wf_call
from bench.common import (
    REPO,
    SMOKE_HELP,
    fmt_us,
    probe_saw,
    remove_scratch,
    save,
    scratch_dir,
    smoke_results,
    summary,
)

PARENT, CHILD = "wfgroups", "wfgroupchild"
GUEST = REPO / "tests" / "guests" / "wf_bench_groups.py"
PREFIX = "/wk-workflow/v1/"
PARTS = ("syncs", "serve", "peers")
WAIT = 60_000
MAX_BRANCHES = 1000  # wf.all's most (wkguest.workflow.groups.branches.MAX_BRANCHES)


def guest_wasm() -> Path:
    from wkhost.engine.build import cached_build

    return cached_build(GUEST, REPO / ".cache" / "components",
                        progress=lambda line: print(f"  [build] {line}", flush=True))


def workloads(branches: int) -> dict[str, Callable[[str], dict[str, Any]]]:
    """name -> the input of an instance of that workload (given its id)."""
    return {
        "three-step workflow": lambda _id: {"n": 3},
        "child round trip (child: 3 steps)": lambda id: {"child": CHILD, "id": f"{id}-c",
                                                         "n": 3},
        f"fan-out: {branches} step branches": lambda _id: {"fan": branches},
        f"{branches} sequential steps": lambda _id: {"n": branches},
    }


def expected(inp: dict[str, Any]) -> Any:
    if "fan" in inp:
        n = inp["fan"]
        return {"branches": n, "last": n - 1 if n else None}
    if "child" in inp:
        return {"child": {"steps": inp["n"]}}
    return {"steps": inp["n"]}


# -- syncs, counted in-process ------------------------------------------------------------

# Why each durable statement of the runner is there (its /*wk:...*/ tag), as the syncs
# part prints it beside each WAL fsync.
WHY = {
    "wk:create": "the start: the instance row (input, run id) and its alarm, before the "
                 "answer says created",
    "wk:end-run": "the run's end: the state it rests in (waiting, sleeping); every step "
                  "result and branch row this event wrote rides on this one fsync",
    "wk:finish": "the finish: output and state, before anything reports them; every step "
                 "result and branch row this event wrote rides on it (group commit: none "
                 "is synced on its own)",
    "wk:child-notice-commit": "the parent takes its child's notice (the event and the "
                              "child's run, one transaction) before answering the child, "
                              "which then counts it delivered",
    "wk:sync": "a start that waits and whose run synced nothing of its own",
    "COMMIT of wk:take-event": "a wait takes an event (here the child's notice): its "
                               "journal entry and the event's deletion in one transaction, "
                               "synced at its COMMIT (store.take_event) although the same "
                               "event's finish syncs again right after: the one fsync of "
                               "these workloads that group commit could absorb",
}


def justify(tag: str) -> str:
    return WHY.get(tag, "(no reason on file: a sync this benchmark does not expect)")


class _Trace(threading.local):
    stack: list[str]

    def __init__(self) -> None:
        self.stack = []


class Trace:
    """Every event (a guest's handle or on-alarm, the benchmark's status polls left
    out), guest statement, durable write and
    WAL fsync of the host in this process, with the event and the statement each
    fsync belongs to."""

    def __init__(self) -> None:
        self.here = _Trace()
        self.lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        with self.lock:
            self.t0 = time.perf_counter()
            self.events: list[dict[str, Any]] = []
            self.syncs: list[dict[str, str]] = []
            self.statements = self.durable = 0
            self.files = Counter[str]()

    def event(self, actor: str, label: str, t0: float) -> None:
        """A guest call that has ended (nested calls end, and are listed, first)."""
        with self.lock:
            self.events.append({"actor": actor, "event": label,
                                "start_ms": (t0 - self.t0) * 1e3,
                                "ms": (time.perf_counter() - t0) * 1e3})

    def figures(self, positions: int) -> dict[str, Any]:
        with self.lock:
            events = sorted(self.events, key=lambda e: float(e["start_ms"]))
            return {"wal_fsyncs": len(self.syncs), "events": len(events),
                    "event_list": events, "syncs": list(self.syncs),
                    "fsync_ms": sum(float(x["ms"]) for x in self.syncs),
                    "durable_writes": self.durable, "guest_writes": self.statements,
                    "positions": positions, "new_file_syncs": dict(self.files)}


TRACE = Trace()


def _actor(path: Path) -> str:
    """`class/id` of an actor's database path (data/<class>/<shard>/<id>.db)."""
    return f"{path.parent.parent.name}/{path.name.removesuffix('.db')}"


def instrument() -> None:
    """Wrap, once, the host's guest call, guest statement and WAL fsync (this process
    only; wkhost's code is not changed)."""
    from wkhost.events import guest_call as host_module
    from wkhost.storage import actordb, files

    if getattr(actordb.ActorDb, "_groups_traced", False):
        return
    actordb.ActorDb._groups_traced = True
    call, guest_exec, fsync_wal = (host_module.call_export, actordb.ActorDb.guest_exec,
                                   actordb.ActorDb._fsync_wal)

    def traced_call(slot: Any, ev: Any, export: str, args: tuple[Any, ...], cfg: Any) -> Any:
        if export == "on-init":
            return call(slot, ev, export, args, cfg)
        route = getattr(args[0], "path", "").rsplit("/", 1)[-1] if args else ""
        label = f"{export}{' ' + route if route else ''}"
        t0 = time.perf_counter()
        TRACE.here.stack.append(label)
        try:
            return call(slot, ev, export, args, cfg)
        finally:
            TRACE.here.stack.pop()
            if route != "status":  # the benchmark's own polls move nothing: not counted
                TRACE.event(f"{slot.ref.cls}/{slot.ref.id}", label, t0)

    def traced_exec(self: Any, sql: str, params: Any, durable: bool, *a: Any, **kw: Any
                    ) -> Any:
        tag = _tag(sql)
        with TRACE.lock:
            TRACE.statements += 1
            if durable:
                TRACE.durable += 1
                # An untagged COMMIT is its transaction's: named by the statement before.
                self._groups_tag = tag or f"COMMIT of {getattr(self, '_groups_last', '?')}"
            if tag:
                self._groups_last = tag
        return guest_exec(self, sql, params, durable, *a, **kw)

    def traced_fsync(self: Any) -> None:
        stack = TRACE.here.stack
        t0 = time.perf_counter()
        try:
            fsync_wal(self)
        finally:
            with TRACE.lock:
                TRACE.syncs.append({"actor": _actor(self.path),
                                    "event": stack[-1] if stack else "(no event)",
                                    "tag": getattr(self, "_groups_tag", "(host)"),
                                    "at_ms": (t0 - TRACE.t0) * 1e3,
                                    "ms": (time.perf_counter() - t0) * 1e3})

    host_module.call_export = traced_call
    actordb.ActorDb.guest_exec = traced_exec
    actordb.ActorDb._fsync_wal = traced_fsync
    for name in ("fdatasync_file", "fsync_dir"):
        real = getattr(files, name)

        def counted(path: Any, real: Any = real, name: str = name) -> None:
            with TRACE.lock:
                TRACE.files["file" if name == "fdatasync_file" else "directory"] += 1
            real(path)

        setattr(files, name, counted)
        if hasattr(actordb, name):
            setattr(actordb, name, counted)


def _tag(sql: str) -> str:
    sql = sql.lstrip()
    start = sql.find("/*")
    end = sql.find("*/", start)
    return sql[start + 2:end] if start == 0 and end > 0 else ""


def same_shard(cls: str, near: str, prefix: str) -> str:
    """An id whose database goes in the same directory as `near`'s: a new directory's
    own sync (once per directory, in a host that has served a while never) is not what
    a workflow costs."""
    from wkhost.storage.paths import db_path

    want = db_path(Path("."), cls, near).parent
    return next(f"{prefix}-{i}" for i in range(100_000)
                if db_path(Path("."), cls, f"{prefix}-{i}").parent == want)


def bench_syncs(branches: int) -> dict[str, Any]:
    instrument()
    host = make_host(scratch_dir("wkbench-groups-sync-"))
    wasm = guest_wasm()
    host.add_class(PARENT, wasm, access="internal")
    host.add_class(CHILD, wasm, access="internal")
    out: dict[str, Any] = {}
    try:
        # Warm-ups: the classes' first instances (the schema image learnt, code paths
        # hot) and the shard directories the counted ids' databases go into.
        for k, inp in enumerate(({"n": 3}, {"fan": 3},
                                 {"child": CHILD, "id": "warm-c", "n": 3})):
            ref = host.actor_ref(PARENT, f"warm-{k}")
            wf_call(host, ref, "start", {"input": inp})
            run_until(host, ref, ("completed",), 60)
        cases: list[tuple[str, dict[str, Any], bool]] = [
            (f"fan-out of {branches}, started then run by its alarm", {"fan": branches}, False),
            (f"fan-out of {branches}, a start that waits", {"fan": branches}, True),
            (f"{branches} sequential steps, started then run by its alarm", {"n": branches},
             False),
            (f"{branches} sequential steps, a start that waits", {"n": branches}, True),
            ("three-step workflow, a start that waits", {"n": 3}, True),
        ]
        if branches < MAX_BRANCHES:  # the most a group takes: still one event, one sync
            cases.insert(2, (f"fan-out of {MAX_BRANCHES}, started then run by its alarm",
                             {"fan": MAX_BRANCHES}, False))
        for i, (label, inp, waits) in enumerate(cases):
            id = same_shard(PARENT, "warm-0", f"sync-{i}")
            out[label] = _traced(host, id, inp, waits)
        for waits, how in ((False, "started then run by its alarm"), (True, "a start that waits")):
            cid = same_shard(CHILD, "warm-2-c", f"sync-child-{int(waits)}")
            pid = same_shard(PARENT, "warm-2", f"sync-parent-{int(waits)}")
            out[f"child round trip (child: 3 steps), {how}"] = _traced(
                host, pid, {"child": CHILD, "id": cid, "n": 3}, waits)
    finally:
        host.close()
    return out


def _traced(host: Any, id: str, inp: dict[str, Any], waits: bool) -> dict[str, Any]:
    ref = host.actor_ref(PARENT, id)
    TRACE.reset()
    msg: dict[str, Any] = {"input": inp}
    if waits:
        msg["wait_ms"] = WAIT  # in-process the answer is not held: the run is in its event
    wf_call(host, ref, "start", msg)
    st = run_until(host, ref, ("completed", "failed", "parked"), 120)
    if st["state"] != "completed" or st["output"] != expected(inp):
        raise RuntimeError(f"{id}: {st['state']} {st.get('output')} {st.get('error')}")
    if "child" in inp:  # the child's own last event (marking its notice delivered) ends it
        host.wait_alarm(host.actor_ref(CHILD, inp["id"]), 0, 0)
    figs = TRACE.figures(st["positions"])
    # What instrument() wraps, each seen at least once (a workflow ends with a synced
    # durable write, in an event): else the host moved it, and these figures are zeros.
    probe_saw("guest call (instrument() wraps events/guest_call.py's call_export)", figs["events"])
    probe_saw("durable statement (instrument() wraps ActorDb.guest_exec)",
              figs["durable_writes"])
    probe_saw("WAL fsync (instrument() wraps ActorDb._fsync_wal)", figs["wal_fsyncs"])
    return {**figs, "wall_ms": (time.perf_counter() - TRACE.t0) * 1e3}


def print_syncs(figs: dict[str, Any]) -> None:
    print("\n  WAL fsyncs of one instance's whole life (in-process, each with its event and"
          " the durable statement that asked for it)")
    for label, f in figs.items():
        print(f"\n  {label}: {f['wal_fsyncs']} WAL fsync(s), {f['events']} event(s), "
              f"{f['durable_writes']} durable write(s), {f['guest_writes']} guest "
              f"statements, {f['positions']} position(s)")
        for s in f["syncs"]:
            print(f"    - {s['actor']}, {s['event']}: {s['tag']}: {justify(s['tag'])}")
        print(f"    = {f['fsync_ms']:.1f} ms in fsyncs, of {f['wall_ms']:.1f} ms from the start "
              "to the status that said completed")
        if len(f["event_list"]) > 2:
            print("    timeline (ms from the start request; a nested call is inside its "
                  "caller's event):")
            for e in f["event_list"]:
                print(f"      {e['start_ms']:7.1f} +{e['ms']:5.1f}  {e['actor']} {e['event']}")
        extra = f["new_file_syncs"]
        if extra:
            print(f"    + the new databases' own syncs, once per new actor, off the event's "
                  f"path: {extra}")


# -- latency through wkhost serve -----------------------------------------------------------

class Client:
    """One kept-alive connection to the server: a start that waits, timed."""

    def __init__(self, url: str, token: str, cls: str = PARENT) -> None:
        self.cls = cls
        parts = urlsplit(url)
        assert parts.hostname is not None
        self.conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=120)
        self.headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/cbor"}

    def post(self, path: str, msg: dict[str, Any]) -> dict[str, Any]:
        self.conn.request("POST", path, cbor2.dumps(msg), self.headers)
        resp = self.conn.getresponse()
        doc: dict[str, Any] = cbor2.loads(resp.read())
        if resp.status != 200:
            raise RuntimeError(f"{path}: {resp.status} {doc}")
        return doc

    def run(self, id: str, inp: dict[str, Any],
            check: Callable[[dict[str, Any]], bool] | None = None) -> float:
        """µs from the start's request to the answer that the instance completed, with
        the output `check` accepts (by default, `expected(inp)`)."""
        base = f"/{self.cls}/{id}{PREFIX}"
        t0 = time.perf_counter()
        st = self.post(base + "start", {"input": inp, "wait_ms": WAIT})
        while st.get("state") not in ("completed", "failed", "cancelled", "parked"):
            st = self.post(base + "status", {"wait_ms": WAIT})
        us = (time.perf_counter() - t0) * 1e6
        ok = check(st) if check is not None else st.get("output") == expected(inp)
        if st.get("state") != "completed" or not ok:
            raise RuntimeError(f"{id}: {st.get('state')} {st.get('output')} {st.get('error')}")
        return us

    def close(self) -> None:
        self.conn.close()


def bench_serve(runs: int, branches: int) -> dict[str, Any]:
    from bench.server import BenchServer

    wasm = guest_wasm()
    server = BenchServer({PARENT: wasm, CHILD: wasm},
                         ["--access", f"{PARENT}=internal", "--access", f"{CHILD}=internal"])
    kinds = workloads(branches)
    samples: dict[str, list[float]] = {name: [] for name in kinds}
    client = Client(server.url, server.token)
    try:
        for r in range(runs + 2):  # two warm-up rounds
            for k, (name, inp) in enumerate(kinds.items()):
                id = f"r{r}-k{k}"
                us = client.run(id, inp(id))
                if r >= 2:
                    samples[name].append(us)
    finally:
        client.close()
        server.close()
    return {name: summary(s) for name, s in samples.items()}


# -- the peers -------------------------------------------------------------------------------

def run_peer(name: str, args: list[str]) -> dict[str, Any]:
    """bench/peers/<name>_groups.py under the peers' interpreter, with `args`: its JSON
    figures."""
    from bench.peers import HERE, RESTATE_SERVER, TIMEOUT_S, VENV_PY

    cmd = [str(VENV_PY), str(HERE / f"{name}_groups.py"), *args]
    if name == "restate":
        cmd += ["--server", str(RESTATE_SERVER)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S,
                              cwd=REPO)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"{name} took over {TIMEOUT_S} s") from None
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise RuntimeError(f"{name} exited {proc.returncode}: {' | '.join(tail)}")
    doc: dict[str, Any] = json.loads(lines[-1])
    return doc


def bench_peers(runs: int, branches: int) -> dict[str, Any]:
    from bench.peers import each_available

    return each_available("groups", lambda name: run_peer(
        name, ["--runs", str(runs), "--branches", str(branches)]))


# -- the table ---------------------------------------------------------------------------------

def _med(s: dict[str, Any] | None) -> float | None:
    return None if not s or "median" not in s else float(s["median"])


def print_latency(figs: dict[str, Any], branches: int) -> None:
    mine = figs.get("serve", {})
    peers = {k: v for k, v in figs.get("peers", {}).items() if "skipped" not in v}
    names = list(workloads(branches))
    head = f"  {'latency of one workflow (start to result)':<44} {'median':>9} {'min':>9} " \
           f"{'max':>9}"
    for p in peers:
        head += f" {p:>9} {'ratio':>6}"
    print(f"\n{head}")
    for name in names:
        s = mine.get(name)
        if not s:
            continue
        line = (f"  {name:<44} {fmt_us(s['median']):>9} {fmt_us(s['min']):>9} "
                f"{fmt_us(s['max']):>9}")
        for f in peers.values():
            t = _med(f.get(name))
            line += (f" {fmt_us(t):>9} {s['median'] / t:>5.2f}x" if t else f" {'-':>9} {'-':>6}")
        print(line)
    for label, a, b, target in _ratios(branches):
        line = f"  {label:<44}"
        m = _ratio(mine, a, b)
        line += f" {m:>8.2f}x" if m else f" {'-':>9}"
        for p, f in peers.items():
            r = _ratio(f, a, b)
            line += f"  {p} {r:.2f}x" if r else f"  {p} -"
        if target and m:
            line += f"   (target <= {target}x: {'met' if m <= target else 'NOT met'})"
        print(line)
    for p, f in figs.get("peers", {}).items():
        print(f"  {p}: {f.get('skipped') or f.get('version', '')}")


def _ratios(branches: int) -> list[tuple[str, str, str, float | None]]:
    names = list(workloads(branches))
    return [("child round trip / three-step workflow", names[1], names[0], 2.0),
            (f"fan-out / {branches} sequential steps", names[2], names[3], None)]


def _ratio(f: dict[str, Any], a: str, b: str) -> float | None:
    x, y = _med(f.get(a)), _med(f.get(b))
    return x / y if x and y else None


def run(parts: tuple[str, ...], runs: int, peer_runs: int, branches: int) -> dict[str, Any]:
    figs: dict[str, Any] = {"runs": runs, "peer_runs": peer_runs, "branches": branches}
    for part in parts:
        started = time.monotonic()
        print(f"  [groups] {part} ...", flush=True)
        if part == "syncs":
            figs["syncs"] = bench_syncs(branches)
        elif part == "serve":
            figs["serve"] = bench_serve(runs, branches)
        elif part == "peers":
            figs["peers"] = bench_peers(peer_runs, branches)
        remove_scratch()
        print(f"  [groups] {part} done in {time.monotonic() - started:.1f} s", flush=True)
    figs["ratios"] = {label: {"wkhost": _ratio(figs.get("serve", {}), a, b), "target": t,
                              **{p: _ratio(f, a, b) for p, f in figs.get("peers", {}).items()}}
                      for label, a, b, t in _ratios(branches)}
    return figs


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=25, help="timed runs of each workload (25)")
    p.add_argument("--branches", type=int, default=100, help="the fan-out's branches (100)")
    p.add_argument("--peer-runs", type=int, default=5, help="timed runs on each peer (5)")
    p.add_argument("--quick", action="store_true", help="--runs 7 --peer-runs 3")
    p.add_argument("--part", action="append", choices=PARTS,
                   help="run only this part (repeatable); default: all")
    p.add_argument("--smoke", action="store_true",
                   help=SMOKE_HELP + " (--runs 1 --peer-runs 1 --branches 3)")
    args = p.parse_args(argv)
    if args.quick:
        args.runs, args.peer_runs = 7, 3
    if args.smoke:
        smoke_results()
        args.runs, args.peer_runs, args.branches = 1, 1, 3
    if args.runs < 1 or args.peer_runs < 1:
        p.error("--runs and --peer-runs must be at least 1")
    if not 1 <= args.branches <= MAX_BRANCHES:
        p.error("--branches takes 1 to 1000 (wf.all's most)")
    os.environ.setdefault("PYTHONHASHSEED", "0")
    figs = run(tuple(args.part or PARTS), args.runs, args.peer_runs, args.branches)
    if "syncs" in figs:
        print_syncs(figs["syncs"])
    print_latency(figs, args.branches)
    print(f"  saved {save('groups', figs)}")
    return figs


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
