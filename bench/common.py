"""Shared helpers for the benchmarks: medians, tables, results files, the probe guest."""

from __future__ import annotations

import atexit
import json
import os
import platform
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results"
COMPILED = REPO / ".cache" / "compiled"

# Where `save` writes instead of bench/results, when set: a smoke run's scratch directory
# (`--smoke`, which `make test` runs), or a quick run's, so that neither overwrites the
# figures of the last full run (the baseline `python -m bench --quick` compares with).
RESULTS_ENV = "WKBENCH_RESULTS"
SMOKE_HELP = ("a smoke run (make test): every part at its smallest, figures to a scratch "
              "results directory; nothing about speed is asserted")


def results_dir() -> Path:
    return Path(os.environ.get(RESULTS_ENV) or RESULTS)


def smoke_results() -> Path:
    """A smoke run's results directory: $WKBENCH_RESULTS, or a new temporary one (set in
    the environment, so that the processes this one starts write there too)."""
    if not os.environ.get(RESULTS_ENV):
        os.environ[RESULTS_ENV] = tempfile.mkdtemp(prefix="wkbench-smoke-results-")
    path = results_dir()
    if path.resolve() == RESULTS.resolve():
        raise SystemExit(f"a smoke run never writes into {RESULTS}: unset {RESULTS_ENV}")
    print(f"  smoke run: figures to {path}", flush=True)
    return path


class ProbeBlind(RuntimeError):
    """A benchmark's probe wraps a seam of the host (a method, a module's function) and
    saw nothing through it: the host has moved what it wraps, and the figures that rest
    on it would be zeros, not measurements. Raised so that the smoke run in `make test`
    fails, instead of the bench printing quietly wrong figures."""


def probe_saw(what: str, count: float) -> None:
    if not count:
        raise ProbeBlind(f"the probe saw no {what}: the host seam it wraps has moved "
                         "(update the probe in bench/)")


# Data directories made by the benchmarks. A full `make bench` writes gigabytes of actor
# databases (the 10,000 sleepers alone about 1.5 GB), and they must not outlive it.
# Under `python -m bench` (SCRATCH_ENV set) they all go into one directory that it
# removes at its very end. Not sooner: this filesystem is mounted with `discard`, and
# with the sleepers' files deleted just before, DBOS (an fsync on every commit) ran at
# half speed, 2.4 against 1.3-1.6 ms a step, in two runs. A module run alone removes
# its own when each part ends (remove_scratch), and what is left at exit.
SCRATCH_ENV = "WKBENCH_SCRATCH"
_SCRATCH: list[Path] = []


def scratch_dir(prefix: str) -> Path:
    """A new temporary directory, removed by `remove_scratch`, at exit, or by the run."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=os.environ.get(SCRATCH_ENV)))
    _SCRATCH.append(path)
    return path


def remove_scratch() -> None:
    if os.environ.get(SCRATCH_ENV):
        return  # the whole run's directory goes at its end
    while _SCRATCH:
        shutil.rmtree(_SCRATCH.pop(), ignore_errors=True)


atexit.register(remove_scratch)


def probe_wasm() -> Path:
    from wkhost.engine.build import cached_build

    return cached_build(REPO / "tests" / "guests" / "probe.py", REPO / ".cache" / "components",
                        progress=lambda line: print(f"  [build] {line}", flush=True))


def example_wasm(name: str) -> Path:
    from wkhost.engine.build import cached_build

    return cached_build(REPO / "examples" / name / "app.py", REPO / ".cache" / "components",
                        progress=lambda line: print(f"  [build] {line}", flush=True))


def timed(fn: Callable[[], Any], repeats: int, inner: int = 1) -> dict[str, float]:
    """Median, min and max of `repeats` runs, in microseconds per inner iteration."""
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        for _ in range(inner):
            fn()
        samples.append((time.perf_counter() - started) / inner * 1e6)
    return summary(samples)


def summary(samples: list[float]) -> dict[str, float]:
    return {"median": statistics.median(samples), "min": min(samples), "max": max(samples),
            "n": len(samples)}


def fmt_us(us: float) -> str:
    if us >= 1e6:
        return f"{us / 1e6:.2f} s"
    if us >= 1e3:
        return f"{us / 1e3:.2f} ms"
    return f"{us:.1f} µs"


def print_table(title: str, rows: list[tuple[str, dict[str, float]]]) -> None:
    print(f"\n{title}")
    print(f"  {'what':<46} {'median':>11} {'min':>11} {'max':>11}")
    for name, s in rows:
        print(f"  {name:<46} {fmt_us(s['median']):>11} {fmt_us(s['min']):>11} "
              f"{fmt_us(s['max']):>11}")


def save(name: str, figures: dict[str, Any]) -> Path:
    into = results_dir()
    into.mkdir(parents=True, exist_ok=True)
    path = into / f"{name}.json"
    doc = {"benchmark": name, "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "machine": {"python": platform.python_version(), "cpus": _cpus()},
           "figures": figures}
    path.write_text(json.dumps(doc, indent=2) + "\n")
    return path


def _cpus() -> int:
    import os

    return os.cpu_count() or 0


# -- a process as /proc sees it ------------------------------------------------------------

_TICK = os.sysconf("SC_CLK_TCK")


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of process `pid`, all its threads, ended ones included."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK  # utime, stime: fields 14 and 15


def process_run_s(pid: int) -> float:
    """CPU seconds that the live threads of process `pid` have run, to the nanosecond
    (their schedstat; `process_cpu_s` counts in clock ticks of 10 ms): for small rates,
    such as an idle server's."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat") as f:
                total += int(f.read().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            pass  # the thread ended meanwhile
    return total / 1e9


def process_tree(pid: int) -> list[int]:
    """`pid` and every live process under it (a supervisor's `--processes N`)."""
    out = [pid]
    children = Path(f"/proc/{pid}/task/{pid}/children")
    if children.exists():
        for child in children.read_text().split():
            out += process_tree(int(child))
    return out


def process_rss_mib(pid: int) -> float:
    """Resident memory of process `pid` (VmRSS), in MiB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise ValueError(f"no VmRSS for process {pid}")
