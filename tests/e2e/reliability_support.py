"""Support for the reliability suites: crash points, runaway and hostile guests, the soak.

    def test_x(launch, shop_wasm):
        host = launch(shop_wasm, data, crash_at="sql-after:wk:result")   # the switch armed
        fleet = Fleet([Order("o1"), Order("o2", trap_in_pack=True)])
        fleet.attach(host)
        died = fleet.pump_until_down()             # drives the orders; the host dies
        snap = fleet.record_kill(died)             # copies the data dir, checks invariants
        fleet.attach(launch(shop_wasm, data))      # restart, no switch, same data
        fleet.pump()                               # every order to its end, fake clock
        fleet.verify()                             # outputs, acknowledged state, reruns

`Host` is tests/e2e/server.Server with an environment (the crash-point switch of
host/testing/crashpoints.py is read from WKHOST_CRASH_AT / WKHOST_CRASH_SKIP when the process
starts). `Fleet` keeps what each order's `start` and `send_event` answered across
restarts, and checks that it stays true. `snapshot` reads every actor database of a
data directory from a copy (never the live files), so a test can see exactly what a
killed host left behind: each unfinished instance's alarm, the journal, the ledger.

Every wait here is bounded in real time; time inside the host moves only by
`POST /_wk/clock/advance` (a restarted fake clock resumes where it was, never behind;
`Fleet.attach` checks it against the last time the data directory saw).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import tempfile
import threading
import time
import urllib.error
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import cbor2
import pytest

from .server import Server

SECOND = 1000
HOUR = 3_600_000
DAY = 86_400_000
RETENTION = 7 * DAY  # examples/workflows/orders/app.py
FINISHED = ("completed", "failed", "cancelled")

EXAMPLES = "examples/workflows"
SHOP_SOURCES = {
    "orders": f"{EXAMPLES}/orders/app.py",
    "ledger": f"{EXAMPLES}/ledger/app.py",
    "app": f"{EXAMPLES}/app/app.py",
    "probe": "tests/guests/probe.py",
}
SHOP_ACCESS = {"orders": "internal", "ledger": "internal"}
CRASH_ENV = ("WKHOST_CRASH_AT", "WKHOST_CRASH_SKIP")


# -- the process ------------------------------------------------------------------------

class HostDown(Exception):
    """The host process died under a request (a crash point, or a kill -9)."""

    def __init__(self, rc: int | None) -> None:
        super().__init__(f"the host exited with {rc}")
        self.rc = rc


class Host(Server):
    """A `wkhost serve --fake-clock` subprocess, with extra environment variables."""

    def __init__(self, data: Path, actors: dict[str, Path], extra: list[str] | None = None,
                 access: dict[str, str] | None = None, env: dict[str, str] | None = None,
                 log_level: str = "info") -> None:
        # The crash switch is this host's alone: never inherited from the test process.
        base = {k: v for k, v in os.environ.items() if k not in CRASH_ENV}
        super().__init__(data, actors, extra, access, {**base, **(env or {})}, log_level)

    def start(self, timeout: float = 60) -> Host:
        super().start(timeout)
        return self

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def wait_exit(self, timeout: float) -> int | None:
        """The exit code once the process has ended, or None if it still runs after
        `timeout` seconds."""
        assert self.proc is not None
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
        self._close_pipes()
        return rc

    def kill_now(self) -> None:
        """SIGKILL, without waiting (safe from another thread)."""
        if self.alive:
            os.kill(self.pid, signal.SIGKILL)

    def close(self) -> None:
        if self.proc is None:
            return
        if self.alive:
            try:
                self.stop(signal.SIGTERM, timeout=20)
            except subprocess.TimeoutExpired:
                self.kill_now()
                self.wait_exit(10)
        else:
            self._close_pipes()

    def rss_kb(self) -> int:
        return rss_kb(self.pid)

    def crashed_at(self, point: str) -> bool:
        return any(f"crash point {point} reached" in line for line in self.log)

    # -- requests that notice a dead host ---------------------------------------------
    def send(self, method: str, path: str, body: bytes | None = None,
             headers: dict[str, str] | None = None, operator: bool = False,
             timeout: float = 30) -> tuple[int, dict[str, str], bytes]:
        """`request`, raising HostDown if the process died under it."""
        try:
            return self.request(method, path, body, headers, operator, timeout)
        except (urllib.error.URLError, OSError, http.client.HTTPException) as e:
            rc = self.wait_exit(3)
            if rc is not None:
                raise HostDown(rc) from e
            raise

    def wk(self, cls: str, actor_id: str, route: str, msg: dict[str, Any] | None = None,
           timeout: float = 30) -> tuple[int, Any]:
        """A wk-workflow/v1 request as the operator: (status, decoded CBOR or text)."""
        path = f"/{cls}/{quote(actor_id, safe='')}/wk-workflow/v1/{route}"
        status, headers, data = self.send("POST", path, cbor2.dumps(msg or {}),
                                          {"Content-Type": "application/cbor"},
                                          operator=True, timeout=timeout)
        ctype = {k.lower(): v for k, v in headers.items()}.get("content-type", "")
        if ctype.startswith("application/cbor"):
            return status, cbor2.loads(data)
        return status, data.decode(errors="replace")

    def wk_unless_killed(self, cls: str, actor_id: str, route: str,
                         msg: dict[str, Any] | None = None) -> Any | None:
        """`wk` on a host with a crash point, for a request whose event sets an alarm at
        now (a start, a cancel): that alarm's run may reach the point before the front door
        has written this answer, on a busy machine. The answer is then lost with the
        process, not what the event recorded. The answer (asserted 200), or None when the
        host died first."""
        try:
            code, answer = self.wk(cls, actor_id, route, msg)
        except HostDown:
            return None
        assert code == 200, answer
        return answer

    def json(self, cls: str, actor_id: str, method: str, path: str, payload: Any = None,
             query: str = "", operator: bool = True, timeout: float = 30) -> tuple[int, Any]:
        body = None if payload is None else json.dumps(payload).encode()
        url = f"/{cls}/{quote(actor_id, safe='')}{path}" + (f"?{query}" if query else "")
        status, _, data = self.send(method, url, body, operator=operator, timeout=timeout)
        try:
            return status, json.loads(data)
        except ValueError:
            return status, data.decode(errors="replace")

    def clock(self, ms: int = 0) -> int:
        status, _, data = self.send("POST", f"/_wk/clock/advance?ms={int(ms)}", b"",
                                    operator=True)
        assert status == 200, data
        return int(json.loads(data)["now"])

    def ids(self, cls: str) -> list[str]:
        status, _, data = self.send("GET", f"/_wk/actors/{cls}?limit=10000", operator=True)
        assert status == 200, data
        return list(json.loads(data)["ids"])


def rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def crash_env(point: str | None, skip: int = 0) -> dict[str, str]:
    if point is None:
        return {}
    return {"WKHOST_CRASH_AT": point, "WKHOST_CRASH_SKIP": str(skip)}


Launch = Callable[..., Host]


@pytest.fixture
def launch(tmp_path: Path) -> Iterator[Launch]:
    """launch(actors, data=None, *, crash_at=None, skip=0, extra=None, access=None,
    log_level="info") -> a started Host; every host is stopped at the end of the test."""
    hosts: list[Host] = []

    def start(actors: dict[str, Path], data: Path | None = None, *, crash_at: str | None = None,
              skip: int = 0, extra: list[str] | None = None,
              access: dict[str, str] | None = None, log_level: str = "info") -> Host:
        host = Host(data or tmp_path / "data", actors, extra,
                    SHOP_ACCESS if access is None else access, crash_env(crash_at, skip),
                    log_level)
        hosts.append(host)
        return host.start()

    yield start
    for h in hosts:
        h.close()


@pytest.fixture(scope="session")
def shop_wasm(build_guest: Callable[[str], Path]) -> dict[str, Path]:
    """orders, ledger and app (examples/workflows) and the probe, built (cached)."""
    return {name: build_guest(src) for name, src in SHOP_SOURCES.items()}


def shop(wasm: dict[str, Path], probe: bool = False) -> dict[str, Path]:
    names = ["orders", "ledger", "app"] + (["probe"] if probe else [])
    return {n: wasm[n] for n in names}


def wait_until(cond: Callable[[], bool], timeout: float = 30.0,
               what: str | Callable[[], str] = "", every: float = 0.02) -> None:
    """Poll `cond` until it holds; fail after `timeout` s saying `what` (or what() then)."""
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            text = what() if callable(what) else what
            pytest.fail(f"not true after {timeout} s: {text or cond}", pytrace=False)
        time.sleep(every)


# -- what a data directory holds (read from a copy) -----------------------------------------

@dataclass
class ActorFile:
    cls: str
    id: str
    path: Path
    initialized: bool
    alarm_at: int | None
    integrity: str
    wf: dict[str, Any] | None = None          # the _wk_wf row
    steps: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    calls: dict[tuple[str, str], int] = field(default_factory=dict)  # the ledger's

    @property
    def unfinished(self) -> bool:
        return self.wf is not None and self.wf["state"] not in FINISHED


@contextlib.contextmanager
def class_db(data: Path, cls: str, *, row: bool = False) -> Iterator[sqlite3.Connection]:
    """A connection to a copy (db and WAL) of the one actor database of `cls` under
    `data`, read while the host may be down or running; the copy goes on exit. ValueError
    if `cls` has no database, or more than one. `row`: rows as sqlite3.Row."""
    [path] = [p for p in (data / "actors").glob("*/*/*.db") if p.parent.parent.name == cls]
    with tempfile.TemporaryDirectory(prefix="wkdb-") as tmp:
        copy = Path(tmp) / "a.db"
        shutil.copyfile(path, copy)
        if Path(f"{path}-wal").exists():
            shutil.copyfile(f"{path}-wal", f"{copy}-wal")
        conn = sqlite3.connect(copy)
        if row:
            conn.row_factory = sqlite3.Row
        try:
            yield conn
        finally:
            conn.close()


def has_db(data: Path, cls: str) -> bool:
    """Whether `cls` has an actor database under `data` yet."""
    return any(p.parent.parent.name == cls for p in (data / "actors").glob("*/*/*.db"))


def table_names(conn: sqlite3.Connection) -> set[str]:
    return {n for (n,) in conn.execute("SELECT name FROM sqlite_master")}


def snapshot(data: Path) -> dict[tuple[str, str], ActorFile]:
    """Every actor database under `data`, read from a copy (db and WAL)."""
    out: dict[tuple[str, str], ActorFile] = {}
    root = data / "actors"
    if not root.is_dir():
        return out
    with tempfile.TemporaryDirectory(prefix="wksnap-") as tmp:
        for i, path in enumerate(sorted(root.glob("*/*/*.db"))):
            copy = Path(tmp) / f"{i}.db"
            shutil.copyfile(path, copy)
            wal = Path(str(path) + "-wal")
            if wal.exists():
                shutil.copyfile(wal, Path(str(copy) + "-wal"))
            a = _read_copy(copy, path)
            out[(a.cls, a.id)] = a
    return out


def _read_copy(copy: Path, path: Path) -> ActorFile:
    conn = sqlite3.connect(copy)
    conn.row_factory = sqlite3.Row
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        meta = ({r[0]: r[1] for r in conn.execute("SELECT k, v FROM _wk_host_meta")}
                if "_wk_host_meta" in tables else {})
        alarm = (conn.execute("SELECT at_ms FROM _wk_host_alarm").fetchone()
                 if "_wk_host_alarm" in tables else None)
        integrity = conn.execute("PRAGMA integrity_check").fetchone()[0]
        a = ActorFile(str(meta.get("class", path.parent.parent.name)), str(meta.get("id", "?")),
                      path, meta.get("initialized") == 1, alarm[0] if alarm else None,
                      integrity)
        if "_wk_wf" in tables:
            row = conn.execute("SELECT * FROM _wk_wf").fetchone()
            a.wf = dict(row) if row else None
        if "_wk_wf_step" in tables:
            a.steps = [dict(r) for r in conn.execute("SELECT * FROM _wk_wf_step ORDER BY pos")]
        if "_wk_wf_event" in tables:
            a.events = [dict(r) for r in conn.execute("SELECT * FROM _wk_wf_event ORDER BY seq")]
        if "calls" in tables:
            a.calls = {(r[0], r[1]): r[2] for r in conn.execute("SELECT op, key, n FROM calls")}
        return a
    finally:
        conn.close()


# -- orders, driven across restarts ----------------------------------------------------------

ORDER_BASE: dict[str, Any] = {"item": "book", "qty": 1, "amount": 1200, "cool_off_ms": 1000,
                              "approve_within_ms": 30 * DAY}
# The ledger operation each step of examples/workflows/orders/flow.py calls, keyed by
# the step's idempotency key (run_id-position), except notify (a try_step, by order id).
STEP_OPS = {"reserve": "reserve", "pack": "attempt", "charge": "charge", "release": "release",
            "notify": "notify"}


@dataclass
class Order:
    oid: str
    knobs: dict[str, Any] = field(default_factory=dict)
    approver: str = ""
    batch: int = 0                   # Fleet.pump starts it once Fleet.batch reaches this
    run_id: str | None = None        # what an acknowledged start answered
    starts: int = 0                  # start requests sent
    sends: int = 0                   # approvals sent
    event_acked: bool = False        # send_event answered 200
    event_unacked: bool = False      # a send got no answer (the host died under it)
    event_recorded: bool = False     # ... and the restarted host had it
    final: dict[str, Any] | None = None
    steps: list[dict[str, Any]] = field(default_factory=list)
    trapped_starts: int = 0          # waiting starts answered 500 (their first run trapped)

    def __post_init__(self) -> None:
        self.approver = self.approver or f"ann-{self.oid}"

    @property
    def input(self) -> dict[str, Any]:
        return {**ORDER_BASE, **self.knobs}

    def expected_output(self) -> dict[str, Any]:
        k = self.knobs
        out = {"order": self.oid, "reservation": f"res-{self.oid}",
               "parcel": f"parcel-{self.oid}" if k.get("trap_in_pack") else None,
               "charge": f"ch-{self.oid}", "approved_by": self.approver,
               "notified": not k.get("notify_fails"), "notify_error": None}
        return out

    def expected_calls(self, step: str) -> int:
        """How many times a step's f calls the ledger without any crash."""
        k = self.knobs
        return {"reserve": 1, "pack": 2, "charge": 1 + int(k.get("charge_failures", 0)),
                "notify": 2 if k.get("notify_fails") else 1, "release": 1}[step]

    def key_of(self, step: dict[str, Any]) -> tuple[str, str]:
        name = step["name"]
        key = self.oid if name == "notify" else f"{self.run_id}-{step['pos']}"
        return STEP_OPS[name], key


class Fleet:
    """Orders on a host (and its restarts), driven to their end with the fake clock.

    It remembers what `start` and `send_event` acknowledged and checks, on every status
    it reads, that it is still true; `record_kill` checks what a dead host left behind."""

    def __init__(self, orders: list[Order], cls: str = "orders",
                 start_wait_ms: int = 0) -> None:
        self.orders = {o.oid: o for o in orders}
        self.cls = cls
        # Above 0: each start waits (wait_ms), so the runner runs the new instance's
        # first run in the start's own event.
        self.start_wait_ms = start_wait_ms
        self.host: Host | None = None
        self.last_now = 0
        self.batch = 0
        self.kills = 0
        self.moved_ms = 0
        self.snapshots: list[dict[tuple[str, str], ActorFile]] = []
        self._seen: dict[str, Any] = {}

    # -- the host and its clock ------------------------------------------------------
    def attach(self, host: Host) -> None:
        """Drive `host` from now on; move its fresh fake clock up to the last time seen."""
        self.host = host
        now = host.clock(0)
        if now < self.last_now:
            now = host.clock(self.last_now - now)
        self.last_now = now

    def advance(self, ms: int) -> int:
        assert self.host is not None
        self.last_now = self.host.clock(ms)
        self.moved_ms += ms
        return self.last_now

    def advance_to(self, at: int) -> int:
        return self.advance(max(0, at - self.last_now))

    # -- requests ----------------------------------------------------------------------
    def wk(self, oid: str, route: str, msg: dict[str, Any] | None = None) -> tuple[int, Any]:
        assert self.host is not None
        return self.host.wk(self.cls, oid, route, msg)

    def start(self, o: Order) -> None:
        o.starts += 1
        msg = {"input": o.input, **({"wait_ms": self.start_wait_ms} if self.start_wait_ms else {})}
        code, doc = self.wk(o.oid, "start", msg)
        if self.start_wait_ms and code == 500:
            # The first run trapped in the start's own event (an order's pack traps
            # once): no answer was given, so the start is sent again later.
            o.trapped_starts += 1
            return
        assert code == 200, (o.oid, code, doc)
        if o.run_id is not None:
            assert doc["run_id"] == o.run_id, ("an acknowledged start changed its run", o, doc)
        o.run_id = doc["run_id"]

    def send_approval(self, o: Order) -> None:
        o.sends += 1
        try:
            code, doc = self.wk(o.oid, "event", {"name": "approved", "payload": {"by": o.approver}})
        except HostDown:
            o.event_unacked = True
            raise
        assert code == 200, (o.oid, code, doc)
        o.event_acked = True
        o.event_unacked = False

    def status(self, o: Order) -> dict[str, Any]:
        code, st = self.wk(o.oid, "status")
        assert code == 200, (f"{o.oid}: an acknowledged start was lost" if code == 404
                             else o.oid, code, st)
        assert st["run_id"] == o.run_id, ("the acknowledged run changed", o.oid, st)
        return dict(st)

    def steps(self, o: Order) -> list[dict[str, Any]]:
        code, doc = self.wk(o.oid, "steps", {"from": 0, "limit": 500})
        assert code == 200, (o.oid, code, doc)
        return list(doc["steps"])

    # -- driving -----------------------------------------------------------------------
    def unfinished(self) -> list[Order]:
        return [o for o in self.orders.values() if o.final is None and o.batch <= self.batch]

    def done(self) -> bool:
        return all(o.final is not None for o in self.orders.values())

    def state(self, oid: str) -> str | None:
        """The state of `oid` as the last poll saw it (None before its first status)."""
        seen = self._seen.get(oid)
        return None if seen is None else str(seen[0])

    def all_in(self, state: str, *oids: str) -> Callable[[], bool]:
        """For `pump(until=...)`: every one of `oids` (default: all orders) in `state`."""
        names = oids or tuple(self.orders)
        return lambda: all(self.state(o) == state for o in names)

    def poll(self, approve: bool = True) -> bool:
        """One look at every order still going; starts, approves. True if anything moved."""
        moved = False
        for o in self.unfinished():
            if o.run_id is None:
                self.start(o)
                moved = True
                if o.run_id is None:
                    continue  # not answered: it is sent again at the next poll
            st = self.status(o)
            sig = (st["state"], st["positions"], st["wake_at"], st["events_pending"],
                   st["error"])
            if self._seen.get(o.oid) != sig:
                self._seen[o.oid] = sig
                moved = True
            if st["state"] in FINISHED:
                o.steps = self.steps(o)
                o.final = st
                continue
            if (approve and st["state"] == "waiting" and "approved" in st["waiting_for"]
                    and not o.event_acked and not o.event_recorded):
                if o.event_unacked and self._event_was_recorded(o, st):
                    o.event_recorded = True
                else:
                    self.send_approval(o)
                moved = True
        return moved

    def _event_was_recorded(self, o: Order, st: dict[str, Any]) -> bool:
        """After a restart: did the send that got no answer reach the journal? Read the
        status first: with nothing pending, the wait's position tells (taken or not)."""
        if st["events_pending"]:
            return True
        wait = [s for s in self.steps(o) if s["name"] == "approved"]
        return bool(wait) and wait[-1]["state"] != "waiting"

    def pump(self, until: Callable[[], bool] | None = None, timeout: float = 90.0,
             max_step_ms: int = HOUR, max_total_ms: int = 3 * DAY) -> None:
        """Drive every order until all are finished (or `until()` holds). When a poll
        sees nothing move, move the clock to the next wake time (at most `max_step_ms`,
        1 s when none is known). Raises HostDown if the host dies meanwhile."""
        end = time.monotonic() + timeout
        still = 0
        total = 0
        while True:
            moved = self.poll()
            if self.done() or (until is not None and until()):
                return
            if time.monotonic() > end:
                self.fail_stuck(f"not finished after {timeout} s")
            still = 0 if moved else still + 1
            if still >= 2:
                step = self._next_step(max_step_ms)
                total += step
                if total > max_total_ms:
                    self.fail_stuck(f"the clock moved {total} ms without finishing")
                self.advance(step)
                still = 0
            else:
                time.sleep(0.03)

    def _next_step(self, max_step_ms: int) -> int:
        wakes = [self._seen[o.oid][2] for o in self.unfinished() if o.oid in self._seen]
        future = [w - self.last_now for w in wakes if w is not None and w > self.last_now]
        return max(1, min(min(future) if future else SECOND, max_step_ms))

    def pump_until_down(self, timeout: float = 60.0, **kw: Any) -> HostDown:
        """Pump until the host dies (a crash point fires); fail if everything finishes
        first or the time runs out."""
        try:
            self.pump(timeout=timeout, **kw)
        except HostDown as e:
            return e
        self.fail_stuck("every order finished, and the host never crashed")
        raise AssertionError("unreachable")

    def fail_stuck(self, why: str) -> None:
        lines: list[str] = []
        for o in self.unfinished():
            lines.append(f"{o.oid} {o.knobs} seen={self._seen.get(o.oid)} run={o.run_id}")
        log = "\n".join(self.host.log[-40:]) if self.host else ""
        pytest.fail(f"{why}\n" + "\n".join(lines) + f"\nhost log:\n{log}", pytrace=False)

    # -- a kill -9 and what it left ---------------------------------------------------
    def record_kill(self, down: HostDown, data: Path) -> dict[tuple[str, str], ActorFile]:
        """After the host died by SIGKILL: read its data directory (a copy) and check
        the promises there. Returns the snapshot (kept for `verify`)."""
        assert down.rc == -signal.SIGKILL, f"the host exited with {down.rc}, not by SIGKILL"
        self.kills += 1
        snap = snapshot(data)
        check_snapshot(snap, self)
        self.snapshots.append(snap)
        return snap

    # -- the end ---------------------------------------------------------------------
    def ledger_calls(self) -> dict[tuple[str, str], int]:
        assert self.host is not None
        status, body = self.host.json("ledger", "main", "GET", "/calls")
        assert status == 200, (status, body)
        return {(op, key): n for op, key, n in body["calls"]}

    def verify(self, max_reruns: int | None = None,
               events_left: dict[str, int] | None = None) -> dict[tuple[str, str], int]:
        """Every order completed with its expected output; what was acknowledged stayed
        true; no step recorded before a kill ran again; every step that ran more than
        needed was counted as an attempt and ran at most once more per kill."""
        assert self.done(), [o.oid for o in self.unfinished()]
        calls = self.ledger_calls()
        extra = self.kills if max_reruns is None else max_reruns
        for o in self.orders.values():
            assert o.final is not None
            assert o.final["state"] == "completed", (o.oid, o.knobs, o.final)
            assert o.final["output"] == {**o.expected_output(), **(
                {"notify_error": o.final["output"]["notify_error"]}
                if o.knobs.get("notify_fails") else {})}, (o.oid, o.final["output"])
            if o.knobs.get("notify_fails"):
                # The mail service's 500, or, when a kill landed in notify's last attempt,
                # that attempt's cut: it never ended, so no result came (WK_CRASH_SEED
                # 116129219 in a fresh-clone run, 7 December).
                said = o.final["output"]["notify_error"] or ""
                assert "500" in said or said.startswith(
                    "attempt 2 ended without a result"), o.final
            left = (events_left or {}).get(o.oid, 0)
            assert o.final["events_pending"] == left, ("events untaken", o.oid, o.final)
            for st in o.steps:
                if st["kind"] != "step":
                    continue
                op_key = o.key_of(st)
                n = calls.get(op_key, 0)
                need = o.expected_calls(st["name"])
                assert need <= n <= need + extra, (
                    f"{o.oid} step {st['name']} ran {n} times (needs {need}, "
                    f"{self.kills} kills)", st)
                assert n <= st["attempts"], (
                    f"{o.oid} step {st['name']} ran {n} times but counted "
                    f"{st['attempts']} attempts", st)
        for snap in self.snapshots:
            for (op, key), n in recorded_step_calls(snap, self).items():
                assert calls.get((op, key)) == n, (
                    f"a step recorded before a kill ran again: {op} {key}: "
                    f"{n} then {calls.get((op, key))}")
        return calls


def recorded_step_calls(snap: dict[tuple[str, str], ActorFile],
                        fleet: Fleet) -> dict[tuple[str, str], int]:
    """For each step whose result was recorded in `snap`: its ledger (op, key) and the
    ledger's count then."""
    ledger = snap.get(("ledger", "main"))
    calls = ledger.calls if ledger else {}
    out: dict[tuple[str, str], int] = {}
    for o in fleet.orders.values():
        a = snap.get((fleet.cls, o.oid))
        if a is None or a.wf is None:
            continue
        for st in a.steps:
            if st["kind"] in ("S", "T", "X") and st["name"] in STEP_OPS:
                key = (o.oid if st["name"] == "notify"
                       else f"{a.wf['run_id']}-{st['pos']}")
                op_key = (STEP_OPS[st["name"]], key)
                out[op_key] = calls.get(op_key, 0)
    return out


def check_snapshot(snap: dict[tuple[str, str], ActorFile], fleet: Fleet) -> None:
    """What a killed host left: no corruption; every workflow instance has its alarm
    (unfinished: the next run; finished: its retention); every acknowledged start and
    event is there."""
    for (cls, aid), a in snap.items():
        assert a.integrity == "ok", (cls, aid, a.integrity)
        if a.initialized and a.unfinished:
            assert a.alarm_at is not None, (
                f"{cls}/{aid} is {a.wf['state'] if a.wf else '?'} with no alarm set", a.wf)
        if a.initialized and a.wf is not None and not a.unfinished:
            # Its retention alarm: the one event that will ever delete it.
            assert a.alarm_at is not None, (
                f"{cls}/{aid} is {a.wf['state']} with no alarm set: it will never be "
                "deleted (its retention alarm was lost)", a.wf)
    for o in fleet.orders.values():
        a = snap.get((fleet.cls, o.oid))
        if o.run_id is not None:
            assert a is not None and a.wf is not None, f"{o.oid}: acknowledged start lost"
            assert a.wf["run_id"] == o.run_id, (o.oid, a.wf)
        if o.event_acked:
            assert a is not None
            pending = any(e["name"] == "approved" for e in a.events)
            taken = any(s["name"] == "approved" and s["kind"] in ("E", "F") for s in a.steps)
            assert pending or taken, f"{o.oid}: an acknowledged event was lost"


# -- a healthy neighbour ----------------------------------------------------------------

class Neighbour:
    """A thread that asks a healthy actor for the time, again and again (bounded), while
    something else misbehaves: at least `min_requests` times, until the `with` block
    ends. Every answer must be a 200."""

    def __init__(self, host: Server, cls: str = "probe", actor_id: str = "healthy",
                 max_requests: int = 2000, timeout: float = 60.0, min_requests: int = 5) -> None:
        self.host = host
        self.min_requests = min_requests
        self.path = f"/{cls}/{actor_id}/now"
        self.max_requests = max_requests
        self.timeout = timeout
        self.statuses: list[int] = []
        self.latencies: list[float] = []
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="neighbour", daemon=True)

    def __enter__(self) -> Neighbour:
        status, _, body = self.host.request("GET", self.path)  # created before the trouble
        assert status == 200, body
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(self.timeout + 10)

    def _run(self) -> None:
        end = time.monotonic() + self.timeout
        while len(self.statuses) < self.max_requests:
            if time.monotonic() > end:
                break
            if self._stop.is_set() and len(self.statuses) >= self.min_requests:
                break
            t0 = time.monotonic()
            try:
                status, _, _ = self.host.request("GET", self.path, timeout=30)
            except Exception as e:  # noqa: BLE001 - any failure is a finding
                self.errors.append(repr(e))
                status = -1
            self.latencies.append(time.monotonic() - t0)
            self.statuses.append(status)
            time.sleep(0.01)

    def check(self) -> None:
        assert not self.errors, self.errors[:5]
        assert len(self.statuses) >= self.min_requests, self.statuses
        bad = [s for s in self.statuses if s != 200]
        assert not bad, f"the healthy actor answered {bad[:10]} ({len(bad)} of " \
                        f"{len(self.statuses)})"

    @property
    def worst_s(self) -> float:
        return max(self.latencies, default=0.0)
