"""Where a three-step workflow's CPU goes in `wkhost serve`, by thread and by what runs.

    python -m bench.profile_workflows                  # two processes, concurrency 32
    python -m bench.profile_workflows --processes 1 --concurrency 1

Records the server's processes with `perf record -e cpu-clock -g` while the benchmarks'
client drives reused-instance workflows through it, then splits the samples: the guest's
compiled code (the component's `.cwasm`), CPython, SQLite (apsw's extension), libc,
ctypes and wasmtime's runtime, and the kernel, whose time on the event threads is also
split by syscall. cpu-clock samples only what is on a CPU, so waiting costs nothing.
This is the profile behind "What bounds each figure" in docs/performance.md.

Needs `perf` (Debian: linux-perf) and a kernel that lets this user record other
processes (`kernel.perf_event_paranoid` at most 2 for one's own, or root).
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from bench.bench_workflows import WF, _load, bench_wasm
from bench.common import process_tree
from bench.server import BenchServer

# What runs, from the sampled frame's object file (perf's "dso").
GUEST, CPYTHON, SQLITE, LIBC, RUNTIME, KERNEL, OTHER = (
    "the guest's code (wasm)", "host Python (CPython)", "SQLite (apsw)", "libc",
    "ctypes and wasmtime's runtime", "the kernel", "other C extensions (aiohttp's)")
EVENT, MAIN, REST = ("event threads", "main threads (the front door's loop)",
                     "other threads (the new files' sync, the janitor, the clock)")


@dataclass
class Sample:
    pid: int
    tid: int
    frames: list[str] = field(default_factory=list)  # leaf first: "symbol (object)"


def parse_perf_script(text: str) -> list[Sample]:
    """`perf script -F pid,tid,ip,sym,dso` of a `-g` recording: a "pid/tid" line, then
    one indented line per frame, leaf first, then a blank line."""
    samples: list[Sample] = []
    current: Sample | None = None
    for line in text.splitlines():
        if line.startswith("\t"):
            if current is not None:
                _, _, frame = line.strip().partition(" ")  # drop the address
                current.frames.append(frame)
        elif line.strip():
            pid, _, tid = line.split()[0].partition("/")
            current = Sample(int(pid), int(tid))
            samples.append(current)
        else:
            current = None
    return samples


def what_runs(frame: str) -> str:
    obj = frame.rsplit("(", 1)[-1]
    if ".cwasm" in obj:
        return GUEST
    if "kernel" in obj:
        return KERNEL
    if "libpython" in obj:
        return CPYTHON
    if "/apsw/" in obj:  # SQLite is linked into apsw's extension module
        return SQLITE
    if "libc.so" in obj:
        return LIBC
    if "_libwasmtime" in obj or "_ctypes" in obj or "libffi" in obj:
        return RUNTIME
    return OTHER


def syscall_of(frames: list[str]) -> str:
    """The syscall a kernel sample is in, from its call chain; else what it was doing."""
    for frame in frames:
        name = frame.split(" ", 1)[0]
        for prefix in ("__x64_sys_", "__do_sys_", "__arm64_sys_"):
            if name.startswith(prefix):
                return name.removeprefix(prefix)
        if name in ("exc_page_fault", "asm_exc_page_fault"):
            return "page fault"
    return "(interrupts, switches: " + (frames[0].split(" ", 1)[0] if frames else "?") + ")"


@dataclass
class Profile:
    per_workflow_us: dict[str, float]          # by thread role
    by_role: dict[str, dict[str, float]]       # role -> what runs -> µs per workflow
    event_syscalls: dict[str, float]           # µs per workflow, the event threads' kernel


def summarize(samples: list[Sample], workflows: int, hz: float) -> Profile:
    """µs of CPU per workflow. A thread is an event thread if it ran guest code in at least
    one sample in twenty; a main thread if its id is its process's."""
    kinds = [what_runs(s.frames[0]) if s.frames else OTHER for s in samples]
    per_thread: dict[tuple[int, int], Counter[str]] = {}
    for s, kind in zip(samples, kinds, strict=True):
        per_thread.setdefault((s.pid, s.tid), Counter())[kind] += 1
    roles = {key: EVENT if k[GUEST] and k[GUEST] * 20 >= sum(k.values())
             else MAIN if key[0] == key[1] else REST
             for key, k in per_thread.items()}

    us = 1e6 / hz / workflows
    by_role: dict[str, Counter[str]] = {}
    for key, k in per_thread.items():
        by_role.setdefault(roles[key], Counter()).update(k)
    calls: Counter[str] = Counter()
    for s, kind in zip(samples, kinds, strict=True):
        if kind == KERNEL and roles[(s.pid, s.tid)] == EVENT:
            calls[syscall_of(s.frames)] += 1
    return Profile(
        {r: sum(k.values()) * us for r, k in by_role.items()},
        {r: {w: n * us for w, n in k.most_common()} for r, k in by_role.items()},
        {c: n * us for c, n in calls.most_common()})


def print_profile(p: Profile, top_syscalls: int = 12) -> None:
    total = sum(p.per_workflow_us.values())
    print(f"  the server's CPU per workflow: {total:,.0f} µs")
    for r in (EVENT, MAIN, REST):
        if r not in p.by_role:
            continue
        print(f"  {r:58s} {p.per_workflow_us[r]:7,.0f} µs")
        for w, v in p.by_role[r].items():
            print(f"      {w:54s} {v:7,.0f} µs")
    print("  the kernel on the event threads, by syscall:")
    for c, v in list(p.event_syscalls.items())[:top_syscalls]:
        print(f"      {c:54s} {v:7,.0f} µs")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.profile_workflows",
                                 description=__doc__.split("\n\n")[0],
                                 epilog="Needs perf (Debian: linux-perf).")
    default = " (default %(default)s)"
    ap.add_argument("--processes", type=int, default=2, help="serve --processes N" + default)
    ap.add_argument("--concurrency", type=int, default=32, help="workflows in flight" + default)
    ap.add_argument("--workflows", type=int, default=3000, help="workflows recorded" + default)
    ap.add_argument("--hz", type=int, default=1999, help="samples a second per CPU" + default)
    ap.add_argument("--keep", type=Path, help="keep perf's recording at this path")
    ap.add_argument("--warmup", type=int, default=300, help="workflows first" + default)
    ap.add_argument("--no-reuse", action="store_true",
                    help="serve without --reuse-instances (the default server's path)")
    ap.add_argument("--smoke", action="store_true", help="a smoke run (make test): "
                    "--concurrency 4 --workflows 20 --warmup 20 --hz 199; nothing about "
                    "speed is asserted")
    args = ap.parse_args(argv)
    if args.smoke:
        args.concurrency, args.workflows, args.warmup, args.hz = 4, 20, 20, 199
    perf = shutil.which("perf")
    if perf is None:
        print("profile: `perf` is not installed (Debian: apt install linux-perf)",
              file=sys.stderr)
        return 2
    extra = ["--access", f"{WF}=internal", "--processes", str(args.processes)]
    if not args.no_reuse:
        extra += ["--reuse-instances", WF]
    print(f"== serving with {' '.join(extra[2:])}; warming up")
    server = BenchServer({WF: bench_wasm()}, extra)
    with tempfile.TemporaryDirectory(prefix="wkprofile-") as tmp:
        data = args.keep or Path(tmp) / "perf.data"
        try:
            # Past the live cap, as a host that has served a while.
            asyncio.run(_load(server.url, server.token, 8, args.warmup, "warmup"))
            pids = ",".join(map(str, process_tree(server.proc.pid)))
            rec = subprocess.Popen([perf, "record", "-e", "cpu-clock", "-F", str(args.hz),
                                    "-g", "-o", str(data), "-p", pids],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            time.sleep(0.5)  # perf attaches
            if rec.poll() is not None:
                assert rec.stderr is not None
                print(f"profile: perf record failed: {rec.stderr.read().strip()}",
                      file=sys.stderr)
                return 1
            print(f"== {args.workflows} workflows at concurrency {args.concurrency}, recorded")
            load = asyncio.run(_load(server.url, server.token, args.concurrency,
                                     args.workflows, "profiled"))
            rec.send_signal(signal.SIGINT)
            rec.wait(120)
        finally:
            server.close()
        script = subprocess.run([perf, "script", "-i", str(data), "-F", "pid,tid,ip,sym,dso"],
                                capture_output=True, text=True, check=True).stdout
    print(f"  {load['wf_per_s']:.0f} wf/s while recorded, {int(load['failures'])} failures")
    print_profile(summarize(parse_perf_script(script), args.workflows, args.hz))
    return 1 if load["failures"] else 0  # a profile of failed workflows is not theirs


if __name__ == "__main__":
    sys.exit(main())
