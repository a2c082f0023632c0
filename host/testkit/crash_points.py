"""The crash-point harness: a workflow run to its end once per durable boundary, its
server killed with SIGKILL at that boundary and restarted on the same data, and each run
checked against one that no kill cut short.

    report = CrashPoints(Target("orders", "orders.wasm"), {"item": "book", ...},
                         others=[Target("ledger", "ledger.wasm", internal=True)],
                         script=[Entry(event="approved", payload={"by": "ann"})]).run()
    report.ok

1. A clean run, its server listing each crash point it reaches (WKHOST_CRASH_LIST,
   host/testing/crashpoints.py). The boundaries are the hits, in it, of the runner's
   durable writes that BOUNDARIES names: a step's attempt counted, its result about to be
   recorded and recorded, a sleep, a wait, a group, a child, a compensation, the end.
2. Per boundary, a run of its own on a new data directory, its server armed to kill
   itself at that hit (WKHOST_CRASH_AT and WKHOST_CRASH_SKIP: it is the real process
   that dies, with SIGKILL, in the middle of whatever it was doing). When it dies, the
   positions in flight are read from the instance's database as the kill left it; then a
   server restarted on the same data, unarmed, takes the instance on to its end.
3. The run's verdict, against the clean run (crash_report.py): each step's function
   must have run as often as in the clean run, or once more for the one step the kill
   fell inside (at-least-once); the instance must end, in the same state with the same
   output. A step's runs are its recorded attempts: the runner counts an attempt before
   the function runs, so every run is counted (docs/guarantees.md).
"""

from __future__ import annotations

import contextlib
import http.client
import shutil
import sqlite3
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..storage.paths import db_path
from .crash_report import Boundary, Report, RunResult, StepKey, verdict
from .crash_script import Entry, Player, Stuck
from .kit import Kit

# The runner's durable writes that are boundaries, by crash point (its statements' tags,
# guest_sdk/wkguest/workflow/core/kinds.py and the modules of groups, children and saga),
# each with what has happened when the kill falls there.
BOUNDARIES = {
    "sql-after:wk:attempt": "a step's attempt counted, its function about to run",
    "sql-before:wk:result": "a step's function returned, its result not yet recorded",
    "sql-after:wk:result": "a step's result recorded",
    "sql-before:wk:step-error": "a step failed for good, not yet recorded",
    "sql-after:wk:step-error": "a step's failure recorded",
    "sql-after:wk:sleep": "a sleep's wake time recorded",
    "sql-after:wk:sleep-done": "a sleep's end recorded",
    "sql-after:wk:wait": "a wait begun",
    "sql-after:wk:take-event": "a wait's event taken",
    "sql-after:wk:timeout": "a wait's timeout recorded",
    "sql-after:wk:group-open": "a group opened",
    "sql-after:wk:branch": "a branch's outcome recorded",
    "sql-after:wk:group": "a group settled",
    "sql-after:wk:child-register": "a child started",
    "sql-after:wk:child-done": "a child's outcome recorded",
    "sql-after:wk:saga-mark": "compensation asked for",
    "sql-after:wk:saga-state": "a compensation's progress recorded",
    "sql-after:wk:can-commit": "a continue-as-new committed",
    "sql-after:wk:finish": "the instance's end recorded",
}
DEFAULT_WITHIN_MS = 30 * 86_400_000  # how far a run may skip the clock (the kit's)
PENDING = "pg"  # the journal's kinds of a position in flight (kinds.py)


class HarnessError(RuntimeError):
    """The harness could not judge: the clean run failed to end, say."""


@dataclass(frozen=True)
class Target:
    """An actor class to serve: its name and app (a .py the kit builds, or a .wasm)."""

    cls: str
    app: Path
    internal: bool = False


@dataclass
class CrashPoints:
    """The harness over one instance of `workflow` (see the module's doc)."""

    workflow: Target
    input: Any
    others: list[Target] = field(default_factory=list)
    script: list[Entry] = field(default_factory=list)
    id: str = "crash-points"
    within_ms: int = DEFAULT_WITHIN_MS
    only: Iterable[str] | None = None  # crash points to keep (all of BOUNDARIES if None)
    jobs: int = 1
    progress: Callable[[str], None] = lambda _line: None

    def run(self) -> Report:
        began = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="wk-crash-points-") as tmp:
            root = Path(tmp)
            listing = root / "points"
            clean = self._one(root / "clean", {"WKHOST_CRASH_LIST": str(listing)}, None)
            if clean.problems:
                raise HarnessError("the run without a kill did not end well: "
                                   + "; ".join(clean.problems))
            bounds = self.boundaries(listing.read_text().splitlines())
            self.progress(f"clean run: {clean.state} in {clean.seconds:.1f} s; "
                          f"{len(bounds)} boundaries to kill at")
            lock, done = threading.Lock(), [0]

            def one(i: int, b: Boundary) -> RunResult:
                env = {"WKHOST_CRASH_AT": b.point, "WKHOST_CRASH_SKIP": str(b.skip)}
                r = verdict(clean, self._one(root / f"b{i}", env, b))
                with lock:
                    done[0] += 1
                    self.progress(f"[{done[0]}/{len(bounds)}] {r.line()}")
                return r

            with ThreadPoolExecutor(max_workers=max(1, self.jobs)) as pool:
                runs = list(pool.map(one, range(len(bounds)), bounds))
        return Report(self.workflow.cls, self.input, clean, runs,
                      time.monotonic() - began)

    def boundaries(self, reached: list[str]) -> list[Boundary]:
        """The boundaries among the points a clean run reached, each hit its own."""
        keep = set(BOUNDARIES if self.only is None else self.only)
        seen: dict[str, int] = {}
        out = []
        for point in reached:
            if point in keep:
                out.append(Boundary(point, seen.get(point, 0),
                                    BOUNDARIES.get(point, "a point named with --only")))
                seen[point] = seen.get(point, 0) + 1
        return out

    def _one(self, root: Path, env: dict[str, str], b: Boundary | None) -> RunResult:
        began = time.monotonic()
        result = RunResult(b)
        kit = Kit(sandbox=True, root=root, server_env=env)
        try:
            w = self.workflow
            inst = kit.serve_workflow(w.cls, w.app, internal=w.internal).instance(self.id)
            for t in self.others:
                kit.serve(t.cls, t.app, internal=t.internal)
            player = Player(inst, self.script, self.within_ms)
            for life in (0, 1):
                try:
                    inst.start(self.input)  # idempotent: again after a restart
                    st = player.play()
                    break
                except Stuck as e:
                    st = e.status
                    result.problems.append(f"stuck: {e}")
                    break
                except (OSError, http.client.HTTPException):  # the server died mid-request
                    if life or not kit.sandbox_server or not kit.sandbox_server.stopped():
                        raise
                    result.killed = True
                    result.at, result.in_flight = in_flight(
                        db_path(root / "data", self.workflow.cls, self.id))
                    kit.restart()
            result.state, result.output, result.error = st.state, st.output, st.error
            result.runs = runs_of(inst.steps())
        except Exception as e:  # noqa: BLE001 - a run's failure is its verdict, not the harness's
            result.problems.append(f"{type(e).__name__}: {e}")
        finally:
            kit.close()
            shutil.rmtree(root, ignore_errors=True)
        result.seconds = time.monotonic() - began
        return result


def runs_of(steps: Iterable[Any]) -> dict[StepKey, int]:
    """How many times each step's function ran (its attempts), by position, and by
    branch within a group's position."""
    out: dict[StepKey, int] = {}
    for s in steps:
        if s.kind == "group":
            for a in s.history:
                key = StepKey(s.pos, a.branch, a.branch_name or s.name)
                out[key] = out.get(key, 0) + 1
        elif s.kind == "step":
            out[StepKey(s.pos, None, s.name)] = s.attempts
    return out


def in_flight(db: Path) -> tuple[str, set[int]]:
    """Where a kill left the instance: its last position (as text), and the positions in
    flight (a step between its attempt and its record, a group whose branches go on),
    read from its database as the kill left it (nothing is written: read-only)."""
    if not db.exists():
        return "before the instance's database was made", set()
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        try:
            rows = conn.execute("SELECT pos, kind, name FROM _wk_wf_step ORDER BY pos"
                                ).fetchall()
        except sqlite3.OperationalError:  # the schema not made yet
            return "before the runner's tables were made", set()
    if not rows:
        return "before the first position", set()
    pos, kind, name = rows[-1]
    return (f"position {pos} {name!r} ({'in flight' if kind in PENDING else 'recorded'})",
            {p for p, k, _ in rows if k in PENDING})
