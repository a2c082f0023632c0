"""The soak (`make soak`): many concurrent order workflows on a real `wkhost serve`, with
sleeps, events and retries, for several minutes, and one host restart in the middle.

    .venv/bin/python -m bench.soak [--workflows 1000] [--minutes 5] [--restart kill|term]
                                   [--seed N] [--out bench/results/soak.json]

Real clock (no --fake-clock). Each workflow is an order of examples/workflows (reserve,
maybe a pack that traps once, a durable cool-off sleep, a wait for "approved", a flaky
charge retried with backoff, a notification that may be down). Starts are spread over
the first 15% of the run; each cool-off lasts 15-45% of it; each approval is sent 10-60%
of it after the start (before or after the wait begins). At the half, the host is killed
with SIGKILL (or stopped with SIGTERM) and restarted on the same data directory; requests
that got no answer are sent again, an event only if the instance does not have it. After
`--minutes` it drains (bounded) and reports:

    started, completed (with the expected output), lost events (acknowledged approvals
    that never reached their workflow), RSS over time (sampled every 2 s), p50/p99 of
    start -> completed (the instance's own created_at / finished_at) and of the lag after
    its last planned wait (cool-off end or approval, whichever came later).

It stops by itself: every wait is bounded. Exit status 0 when completed == started, no
event was lost and the peak RSS stayed under --rss-cap-mb; 1 otherwise.
`run_soak()` is what tests/e2e/test_soak_short.py calls with a small load.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import heapq
import http.client
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cbor2

from bench.common import COMPILED, REPO, SMOKE_HELP, results_dir, smoke_results

SOURCES = {"orders": "examples/workflows/orders/app.py",
           "ledger": "examples/workflows/ledger/app.py"}
ACCESS = {"orders": "internal", "ledger": "internal"}
FINISHED = ("completed", "failed", "cancelled")


def build() -> dict[str, Path]:
    from wkhost.engine.build import cached_build

    return {name: cached_build(REPO / src, REPO / ".cache" / "components")
            for name, src in SOURCES.items()}


# -- the host process ------------------------------------------------------------------------

class Down(Exception):
    """No answer: the host is down or restarting."""


class SoakHost:
    def __init__(self, data: Path, actors: dict[str, Path], extra: list[str]) -> None:
        self.data = data
        self.actors = actors
        self.extra = extra
        self.proc: subprocess.Popen[str] | None = None
        self.url = ""
        self.log: collections.deque[str] = collections.deque(maxlen=200)
        self.lock = threading.Lock()

    def start(self, timeout: float = 120) -> None:
        cmd = [sys.executable, "-m", "wkhost.cli", "serve", "--port", "0", "--data",
               str(self.data), "--cache-dir", str(COMPILED), "--log-level", "warning"]
        for name, wasm in self.actors.items():
            cmd += ["--actor", f"{name}={wasm}"]
        for name, level in ACCESS.items():
            cmd += ["--access", f"{name}={level}"]
        env = {k: v for k, v in os.environ.items() if not k.startswith("WKHOST_CRASH")}
        proc = subprocess.Popen(cmd + self.extra, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, cwd=REPO, env=env)
        self._readers = [threading.Thread(target=self._drain, args=(proc,), daemon=True)]
        self._readers[0].start()
        assert proc.stdout is not None
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            line = proc.stdout.readline()
            if not line:
                raise RuntimeError("wkhost serve exited early:\n" + "\n".join(self.log))
            if "listening on " in line:
                with self.lock:
                    self.proc = proc
                    self.url = line.strip().split("listening on ", 1)[1]
                out = threading.Thread(target=_read_all, args=(proc.stdout,), daemon=True)
                out.start()
                self._readers.append(out)
                return
        raise RuntimeError("wkhost serve did not start in time")

    def _close(self, proc: subprocess.Popen[str]) -> None:
        """After the process ended: let the readers see EOF, then close the pipes."""
        for t in self._readers:
            t.join(5)
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                with contextlib.suppress(OSError, ValueError):
                    pipe.close()

    def _drain(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stderr is not None
        try:
            for line in proc.stderr:
                self.log.append(line.rstrip("\n"))
        except (OSError, ValueError):
            pass

    @property
    def token(self) -> str:
        if not getattr(self, "_token", ""):
            self._token = (self.data / "_host" / "admin-token").read_text().strip()
        return self._token

    def pid(self) -> int | None:
        with self.lock:
            return self.proc.pid if self.proc and self.proc.poll() is None else None

    def restart(self, how: str) -> float:
        """Kill (SIGKILL) or stop (SIGTERM) the process, start it again. Returns the
        seconds without a host."""
        with self.lock:
            proc, self.url = self.proc, ""
        assert proc is not None
        t0 = time.monotonic()
        proc.send_signal(signal.SIGKILL if how == "kill" else signal.SIGTERM)
        proc.wait(60)
        self._close(proc)
        self.start()
        return time.monotonic() - t0

    def stop(self) -> int | None:
        with self.lock:
            proc = self.proc
        if proc is None:
            return None
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
        self._close(proc)
        return proc.returncode

    def wk(self, oid: str, route: str, msg: dict[str, Any], timeout: float = 30) -> tuple[int, Any]:
        url = self.url
        if not url:
            raise Down("restarting")
        req = urllib.request.Request(
            f"{url}/orders/{oid}/wk-workflow/v1/{route}", data=cbor2.dumps(msg), method="POST",
            headers={"Authorization": f"Bearer {self.token}",
                     "Content-Type": "application/cbor"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                return resp.status, cbor2.loads(resp.read())
        except urllib.error.HTTPError as e:
            data = e.read()
            if e.code == 503:  # backpressure, or storage: try again shortly
                raise Down(f"503: {data[:200]!r}") from None
            try:
                return e.code, cbor2.loads(data)
            except Exception:  # noqa: BLE001 - the host's plain-text refusals
                return e.code, data.decode(errors="replace")
        except (urllib.error.URLError, OSError, http.client.HTTPException) as e:
            raise Down(str(e)) from None


def _read_all(pipe: Any) -> None:
    with contextlib.suppress(OSError, ValueError):
        pipe.read()


def rss_mb(pid: int | None) -> float | None:
    if pid is None:
        return None
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


# -- the workload ------------------------------------------------------------------------------

@dataclass
class Flow:
    oid: str
    knobs: dict[str, Any]
    start_at: float       # seconds after the soak began
    approve_at: float
    approver: str
    run_id: str | None = None
    created_at: int | None = None
    approved_at_ms: int | None = None   # when the approval was acknowledged (wall clock)
    event_acked: bool = False
    event_unacked: bool = False
    sends: int = 0
    starts: int = 0
    final: dict[str, Any] | None = None

    def input(self) -> dict[str, Any]:
        return {"item": "book", "qty": 1, "amount": 500, **self.knobs}

    def expected(self, out: dict[str, Any]) -> bool:
        k = self.knobs
        return (out.get("order") == self.oid and out.get("reservation") == f"res-{self.oid}"
                and out.get("parcel") == (f"parcel-{self.oid}" if k.get("trap_in_pack")
                                          else None)
                and out.get("charge") == f"ch-{self.oid}"
                and out.get("approved_by") == self.approver
                and out.get("notified") == (not k.get("notify_fails")))


def plan(workflows: int, seconds: float, seed: int) -> list[Flow]:
    rng = random.Random(seed)
    out = []
    for i in range(workflows):
        start = rng.uniform(0, 0.15) * seconds
        knobs = {"cool_off_ms": int(rng.uniform(0.15, 0.45) * seconds * 1000),
                 "approve_within_ms": int(4 * seconds * 1000) + 86_400_000,
                 "trap_in_pack": rng.random() < 0.2,
                 "charge_failures": rng.choice([0, 0, 1, 2]),
                 "notify_fails": rng.random() < 0.1}
        approve = start + rng.uniform(0.10, 0.60) * seconds
        out.append(Flow(f"s{i:05d}", knobs, start, approve, f"clerk-{i}"))
    return out


@dataclass
class Soak:
    host: SoakHost
    flows: list[Flow]
    seconds: float
    restart: str
    say: Any
    t0: float = 0.0
    rss: list[tuple[float, float]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    retries: int = 0
    restart_gap_s: float = 0.0
    _heap: list[tuple[float, int, str, Flow]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _seq: int = 0

    def elapsed(self) -> float:
        return time.monotonic() - self.t0

    def push(self, at: float, what: str, f: Flow) -> None:
        with self._lock:
            self._seq += 1
            heapq.heappush(self._heap, (at, self._seq, what, f))

    def pop_due(self) -> tuple[str, Flow] | None:
        with self._lock:
            if self._heap and self._heap[0][0] <= self.elapsed():
                _, _, what, f = heapq.heappop(self._heap)
                return what, f
            return None

    # -- actions (on the pool) ------------------------------------------------------------
    def act(self, what: str, f: Flow) -> None:
        try:
            if what == "start":
                self._start(f)
            elif what == "approve":
                self._approve(f)
        except Down:
            self.retries += 1
            self.push(self.elapsed() + 0.5, what, f)
        except Exception as e:  # noqa: BLE001 - reported, the soak goes on
            self.errors.append(f"{what} {f.oid}: {type(e).__name__}: {e}")

    def _start(self, f: Flow) -> None:
        f.starts += 1
        code, doc = self.host.wk(f.oid, "start", {"input": f.input()})
        if code != 200:
            raise RuntimeError(f"start answered {code}: {doc}")
        if f.run_id is not None and doc["run_id"] != f.run_id:
            self.errors.append(f"{f.oid}: an acknowledged start changed its run")
        f.run_id, f.created_at = doc["run_id"], doc["created_at"]

    def _approve(self, f: Flow) -> None:
        if f.run_id is None:  # its start has not been acknowledged yet
            self.push(self.elapsed() + 0.5, "approve", f)
            return
        if f.event_unacked and self._recorded(f):
            f.event_unacked = False
            return
        f.sends += 1
        try:
            code, doc = self.host.wk(f.oid, "event",
                                     {"name": "approved", "payload": {"by": f.approver}})
        except Down:
            f.event_unacked = True
            raise
        if code != 200:
            raise RuntimeError(f"event answered {code}: {doc}")
        f.event_acked, f.event_unacked = True, False
        f.approved_at_ms = int(time.time() * 1000)

    def _recorded(self, f: Flow) -> bool:
        """Did a send that got no answer reach the instance? Status first: with nothing
        pending, the wait's position tells whether it was taken."""
        code, st = self.host.wk(f.oid, "status", {})
        if code != 200:
            raise RuntimeError(f"status answered {code}: {st}")
        if st["state"] in FINISHED or st["events_pending"]:
            return True
        code, page = self.host.wk(f.oid, "steps", {"from": 0, "limit": 500})
        return any(s["name"] == "approved" and s["state"] != "waiting" for s in page["steps"])

    # -- the run ----------------------------------------------------------------------------
    def run(self, workers: int = 16) -> None:
        self.t0 = time.monotonic()
        for f in self.flows:
            self.push(f.start_at, "start", f)
            self.push(f.approve_at, "approve", f)
        restarted = False
        next_sample = 0.0
        next_say = 0.0
        with ThreadPoolExecutor(workers) as pool:
            inflight: set[Any] = set()
            while True:
                now = self.elapsed()
                if now >= next_sample:
                    mb = rss_mb(self.host.pid())
                    if mb is not None:
                        self.rss.append((round(now, 1), round(mb, 1)))
                    next_sample = now + 2.0
                if not restarted and now >= self.seconds / 2:
                    restarted = True
                    # In a thread of its own: the actions go on meanwhile, and those that
                    # get no answer are sent again.
                    restarter = threading.Thread(target=self._restart, daemon=True)
                    restarter.start()
                if now >= next_say:
                    acked = sum(f.run_id is not None for f in self.flows)
                    ev = sum(f.event_acked for f in self.flows)
                    last = self.rss[-1][1] if self.rss else 0
                    self.say(f"  {now:6.1f} s: started {acked}, approved {ev}, "
                             f"RSS {last:.0f} MiB")
                    next_say = now + max(10.0, self.seconds / 10)
                inflight = {x for x in inflight if not x.done()}
                item = self.pop_due() if len(inflight) < workers * 2 else None
                if item is not None:
                    inflight.add(pool.submit(self.act, *item))
                    continue
                with self._lock:
                    empty = not self._heap
                if empty and not inflight and now >= self.seconds and self.host.url:
                    return
                if now > self.seconds * 2 + 120:
                    self.errors.append("the actions did not finish in time")
                    return
                time.sleep(0.01)

    def _restart(self) -> None:
        self.say(f"  {self.elapsed():6.1f} s: {self.restart} and restart of the host")
        try:
            self.restart_gap_s = self.host.restart(self.restart)
        except Exception as e:  # noqa: BLE001 - reported; the soak cannot go on well
            self.errors.append(f"restart failed: {e}")
            return
        self.say(f"  {self.elapsed():6.1f} s: back after {self.restart_gap_s:.1f} s")

    def drain(self, timeout: float) -> None:
        """Poll every workflow until it is finished (bounded), keeping sampling RSS."""
        end = time.monotonic() + timeout
        pending = [f for f in self.flows if f.final is None]
        while pending and time.monotonic() < end:
            mb = rss_mb(self.host.pid())
            if mb is not None:
                self.rss.append((round(self.elapsed(), 1), round(mb, 1)))
            still = []
            for f in pending:
                try:
                    code, st = self.host.wk(f.oid, "status", {})
                except Down:
                    still.append(f)
                    continue
                if code == 200 and st["state"] in FINISHED:
                    f.final = st
                else:
                    still.append(f)
            pending = still
            if pending:
                time.sleep(1.0)

    def report(self) -> dict[str, Any]:
        started = [f for f in self.flows if f.run_id is not None]
        completed = [f for f in started if f.final and f.final["state"] == "completed"
                     and f.expected(f.final.get("output") or {})]
        wrong = [f.oid for f in started if f.final and f not in completed]
        lost = [f.oid for f in self.flows if f.event_acked and not (
            f.final and (f.final.get("output") or {}).get("approved_by") == f.approver)]
        e2e = sorted(f.final["finished_at"] - f.final["created_at"] for f in completed
                     if f.final)
        lag = []
        for f in completed:
            assert f.final is not None and f.created_at is not None
            planned = max(f.created_at + f.knobs["cool_off_ms"], f.approved_at_ms or 0)
            lag.append(max(0, f.final["finished_at"] - planned))
        lag.sort()
        mbs = [mb for _, mb in self.rss]
        half = self.seconds / 2
        return {
            "workflows": len(self.flows), "started": len(started),
            "completed": len(completed), "unfinished": [f.oid for f in started
                                                        if f.final is None][:20],
            "wrong_output": wrong[:20], "lost_events": len(lost), "lost": lost[:20],
            "events_pending_at_end": sum((f.final or {}).get("events_pending", 0)
                                         for f in started),
            "resent_events": sum(max(0, f.sends - 1) for f in self.flows),
            "start_to_completed_ms": pct(e2e), "lag_after_last_wait_ms": pct(lag),
            "rss_mb": {"max": max(mbs, default=0), "max_before_restart": max(
                (mb for t, mb in self.rss if t < half), default=0),
                "max_after_restart": max((mb for t, mb in self.rss if t >= half), default=0),
                "last": mbs[-1] if mbs else 0, "samples": self.rss},
            "restart": self.restart, "restart_gap_s": round(self.restart_gap_s, 2),
            "retried_requests": self.retries, "errors": self.errors[:20],
        }


def pct(xs: list[int]) -> dict[str, Any]:
    if not xs:
        return {"n": 0}
    return {"n": len(xs), "p50": xs[len(xs) // 2], "p99": xs[min(len(xs) - 1,
                                                                  int(len(xs) * 0.99))],
            "max": xs[-1]}


def run_soak(workflows: int = 1000, minutes: float = 5.0, restart: str = "kill",
             seed: int | None = None, data: Path | None = None, workers: int = 16,
             extra: list[str] | None = None, quiet: bool = False,
             drain_s: float | None = None) -> dict[str, Any]:
    def say(line: str) -> None:
        if not quiet:
            print(line, flush=True)

    seed = random.randrange(1 << 30) if seed is None else seed
    seconds = minutes * 60
    own = data is None
    data = data or Path(tempfile.mkdtemp(prefix="wksoak-"))
    actors = build()
    host = SoakHost(data, actors, extra or [])
    host.start()
    say(f"soak: {workflows} workflows over {seconds:.0f} s, {restart} restart at the half, "
        f"seed {seed}, data {data}")
    soak = Soak(host, plan(workflows, seconds, seed), seconds, restart, say)
    t_start = time.monotonic()
    try:
        soak.run(workers)
        say(f"  {soak.elapsed():6.1f} s: every start and approval sent; draining")
        soak.drain(drain_s if drain_s is not None else max(60.0, seconds * 0.5))
        report = soak.report()
        report.update(seed=seed, minutes=minutes, wall_s=round(time.monotonic() - t_start, 1),
                      host_log_tail=list(host.log)[-15:])
    finally:
        rc = host.stop()
        if own and rc == 0:
            shutil.rmtree(data, ignore_errors=True)
    report["stop_rc"] = rc
    return report


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__.split("\n")[0])
    p.add_argument("--workflows", type=int, default=1000)
    p.add_argument("--minutes", type=float, default=5.0)
    p.add_argument("--restart", choices=["kill", "term"], default="kill")
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--workers", type=int, default=16, help="client threads")
    p.add_argument("--rss-cap-mb", type=float, default=2048)
    p.add_argument("--out", type=Path, default=None, help="default: bench/results/soak.json")
    p.add_argument("--smoke", action="store_true",
                   help=SMOKE_HELP + " (--workflows 8 --minutes 0.1, the restart too)")
    args = p.parse_args(argv)
    if args.smoke:
        smoke_results()
        args.workflows, args.minutes = 8, 0.1
    args.out = args.out or results_dir() / "soak.json"
    r = run_soak(args.workflows, args.minutes, args.restart, args.seed, workers=args.workers)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(r, indent=1) + "\n")
    rss = r["rss_mb"]
    print(f"\nstarted {r['started']}, completed {r['completed']} (expected output), "
          f"lost events {r['lost_events']}, events sent again {r['resent_events']}")
    print(f"start -> completed: p50 {r['start_to_completed_ms'].get('p50')} ms, "
          f"p99 {r['start_to_completed_ms'].get('p99')} ms; lag after the last planned wait: "
          f"p50 {r['lag_after_last_wait_ms'].get('p50')} ms, "
          f"p99 {r['lag_after_last_wait_ms'].get('p99')} ms")
    print(f"RSS: max {rss['max']:.0f} MiB (before the restart {rss['max_before_restart']:.0f}, "
          f"after {rss['max_after_restart']:.0f}), last {rss['last']:.0f} MiB; "
          f"restart gap {r['restart_gap_s']} s; wall {r['wall_s']} s; results in {args.out}")
    if r["errors"]:
        print("errors:", *r["errors"], sep="\n  ")
    ok = (r["completed"] == r["started"] == r["workflows"] and r["lost_events"] == 0
          and rss["max"] <= args.rss_cap_mb and not r["errors"])
    print("soak: OK" if ok else "soak: FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
