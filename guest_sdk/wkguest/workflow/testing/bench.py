"""Replay cost, natively: µs per recorded position for one event that replays N of them.

    >>> from wkguest.workflow.testing.bench import bench_replay
    >>> bench_replay(1000, warm=True).guest_us

The instance has N recorded steps (the dict or str results of reference/replay-floor.md)
and then a pending sleep, so one on_alarm event loads, replays all N, and suspends again:
its fixed writes (bad-run count, alarm, end of run) are included. `warm` keeps the runner
(and its cached journal) between events, as a live instance does; cold gives every event
a fresh runner that loads the whole journal. `total_us` is per position for the whole
event; `guest_us` leaves out the time spent inside the fake host (stdlib sqlite3 and its
JSON packing), which in production is the host's, not the guest's. These are native
CPython figures: a componentize-py guest runs the same code several times slower.

`python -m wkguest.workflow.testing` prints the table for 100, 1,000 and 5,000.

For scale, docs/performance.md has the same replay measured inside a real component,
where an event's fixed cost (the load, the bad-run count, two alarm sets, the end of the
run) dominates short journals.
"""

from __future__ import annotations

import gc
import time
from typing import Any, NamedTuple

from ..core.config import Config
from ..core.kinds import SLEEPING, STEP_RETURNED
from ..core.store import Store
from ..core.values import encode
from ..run import Run
from ..runner import Runner
from .fakes import FakeBackend

FAR = 10**15


class ReplayBench(NamedTuple):
    n: int
    warm: bool
    shape: str
    total_us: float  # per recorded position, whole event
    guest_us: float  # per recorded position, without the fake host's time


def _value(i: int, shape: str) -> Any:
    if shape == "dict":
        return {"order": f"ord-{i:06d}", "status": "charged", "n": i}
    if shape == "str":
        return f"receipt-{i:06d}-ok-".ljust(48, "x")
    raise ValueError(f"shape is 'dict' or 'str', not {shape!r}")


def _never() -> Any:
    raise AssertionError("a recorded step ran again")


def _workflow(n: int) -> Any:
    def fn(wf: Run, _input: Any) -> Any:
        for _ in range(n):
            wf.step("charge-card", _never)
        wf.sleep("end", FAR)
        return None

    return fn


def recorded_backend(n: int, shape: str = "dict") -> FakeBackend:
    """A fake instance with `n` recorded steps and a pending sleep after them."""
    b = FakeBackend()
    Store(b).init_schema()
    now = b.clock.now()
    b.conn.execute(
        "INSERT INTO _wk_wf (id, state, run_id, input, input_tagged, wake_at, created_at,"
        " updated_at) VALUES (1, 'waiting', 'bench', 'null', 0, ?, ?, ?)", (FAR, now, now))
    b.conn.executemany(
        "INSERT INTO _wk_wf_step (pos, kind, name, result, attempts, updated_at)"
        f" VALUES (?, '{STEP_RETURNED}', 'charge-card', ?, 1, ?)",
        [(i, encode(_value(i, shape), 1 << 20)[0], now) for i in range(n)])
    b.conn.execute("INSERT INTO _wk_wf_step (pos, kind, name, wake_at, updated_at)"
                   f" VALUES (?, '{SLEEPING}', 'end', ?, ?)", (n, FAR, now))
    return b


def bench_replay(n: int, *, warm: bool = True, shape: str = "dict",
                 repeat: int = 7) -> ReplayBench:
    """Best of `repeat` events replaying `n` recorded positions. No assertion on time."""
    b = recorded_backend(n, shape)
    runner = Runner(_workflow(n), Config(), b)
    runner.on_alarm()  # fills the cache (warm) and checks the setup works
    best_total = best_guest = float("inf")
    for _ in range(repeat):
        if not warm:
            runner.forget()
        gc.collect()
        host0, t0 = b.host_ns, time.perf_counter_ns()
        runner.on_alarm()
        total = time.perf_counter_ns() - t0
        best_total = min(best_total, total)
        best_guest = min(best_guest, total - (b.host_ns - host0))
    per = max(n, 1) * 1000
    return ReplayBench(n, warm, shape, best_total / per, best_guest / per)


def main() -> None:
    print("native CPython, µs per recorded position (whole event / without the fake host)")
    for shape in ("dict", "str"):
        for n in (100, 1000, 5000):
            cells = []
            for warm in (True, False):
                r = bench_replay(n, warm=warm, shape=shape)
                cells.append(f"{'warm' if warm else 'cold'} {r.total_us:6.3f} / {r.guest_us:6.3f}")
            print(f"{shape:4} n={n:5}  " + "   ".join(cells))
