"""A fake clock and a fake Backend on the stdlib's sqlite3, for native tests and benchmarks.

`FakeBackend` behaves as the host promises: every exec commits (autocommit; an explicit
BEGIN ... COMMIT works), exec_durable is also a durability point, the alarm is stored
with the data, and `power_loss()` rolls the database and the alarm back to the last
durability point, so a test can check that what was reported survives. Faults can be
injected with `fail_when`, and the time spent inside it is counted (`host_ns`) so that
benchmarks can tell the runner's own time from the fake host's.
"""

from __future__ import annotations

import base64
import json
import sqlite3
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..backend import TRAP_UNKNOWN, CallFailed, Labels, LastTrap, Param
from ..errors import StoreFault

START_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z: far from 0, so off-by-epoch bugs show


class FakeClock:
    """The host's clock, moved by tests: never sleep, `jump`."""

    def __init__(self, start_ms: int = START_MS) -> None:
        self.ms = start_ms

    def now(self) -> int:
        return self.ms

    def jump(self, ms: int) -> int:
        """Move forward `ms` (>= 0) and return the new time."""
        if ms < 0:
            raise ValueError("the clock only moves forward")
        self.ms += ms
        return self.ms


class FakeBackend:
    def __init__(self, clock: FakeClock | None = None, ref: tuple[str, str] = ("wf", "1")) -> None:
        self.clock = clock or FakeClock()
        self.ref = ref
        # autocommit (isolation_level=None), like the host's exec; BEGIN/COMMIT still work
        self.conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        self.alarm: int | None = None
        self.alarm_touched = False  # did this event set or clear the alarm? (host rule)
        self.deleted = False
        # The host's `lifecycle.last-trap-info` (`trap`: its message, last-trap's text):
        # kept until an event that read it ends cleanly.
        self.trap_info: LastTrap | None = None
        self.trap_read = False
        self.fail_when: Callable[[str, str], bool] | None = None  # (method, sql) → fault?
        # How `call` reaches other actors: FakeHost sets it (a nested event of the callee).
        self.caller: Callable[[str, str, str, str, bytes], tuple[int, bytes]] | None = None
        self.calls: Counter[str] = Counter()
        # What lifecycle tells: a test sets them (fuel_used: the fuel burnt so far).
        self.fuel = 0
        self.memory: int | None = None
        self.holder_name = "process 0 of 1 (pid 1)"
        self.deadlines: list[int | None] = []  # narrow_deadline's arguments, in order
        self.deadline_at: int | None = None
        # What the actor last published (WIT attributes): (status, updated_ms, labels).
        self.published: tuple[str, int, dict[str, str]] | None = None
        self.logged: list[tuple[str, str, dict[str, str]]] = []  # its log records
        self.traceparent = ""  # what trace_current answers: "" is not traced
        self.spans: list[list[Any]] = []  # what span_begin and span_end were given
        # Its metrics' samples: ("add" or "observe", name, labels, value)
        self.counted: list[tuple[str, str, dict[str, str], float]] = []
        self.host_ns = 0
        self._durable: tuple[bytes | None, int | None] = (None, None)  # None: empty

    # -- sqlite ----------------------------------------------------------------------

    def _run(self, method: str, sql: str, params: Sequence[Param]) -> sqlite3.Cursor:
        t0 = time.perf_counter_ns()
        self.calls[method] += 1
        try:
            if self.fail_when is not None and self.fail_when(method, sql):
                raise StoreFault(f"injected fault in {method}")
            try:
                return self.conn.execute(sql, tuple(params))
            except sqlite3.ProgrammingError as e:
                # Several ";"-separated statements, which the host runs one after another.
                if params or "one statement at a time" not in str(e):
                    raise
                return self.conn.executescript(sql)
        except sqlite3.Error as e:
            raise StoreFault(f"sqlite: {e}") from None
        finally:
            self.host_ns += time.perf_counter_ns() - t0

    def exec(self, sql: str, params: Sequence[Param] = ()) -> int:
        return max(self._run("exec", sql, params).rowcount, 0)

    def exec_durable(self, sql: str, params: Sequence[Param] = ()) -> int:
        changes = max(self._run("exec_durable", sql, params).rowcount, 0)
        if not self.conn.in_transaction:  # inside a transaction the sync is at COMMIT
            self._durable = (self.conn.serialize(), self.alarm)
        return changes

    def exec_many(self, writes: Sequence[tuple[str, Sequence[Param]]]) -> int:
        """One call (counted as one exec), its writes run in turn
        through `exec` (a test that cuts at a statement sees each), as the host runs a
        script's statements."""
        changes = 0
        for i, (sql, params) in enumerate(writes):
            changes = self.exec(sql, params)
            if i:
                self.calls["exec"] -= 1  # one call for all of them
        return changes

    def query_packed(self, sql: str, params: Sequence[Param] = ()) -> str:
        cur = self._run("query_packed", sql, params)
        t0 = time.perf_counter_ns()
        cols = [d[0] for d in cur.description or ()]
        rows = [[_packed(v) for v in row] for row in cur.fetchall()]
        out = json.dumps([cols, *rows], separators=(",", ":"))  # as host/storage/actordb.py does
        self.host_ns += time.perf_counter_ns() - t0
        return out

    def query_row(self, sql: str, params: Sequence[Param] = ()) -> tuple[Any, ...] | None:
        row = self._run("query_row", sql, params).fetchone()
        if row is None:
            return None
        # As the host's typed exec: a BLOB comes back as bytes.
        return tuple(bytes(v) if isinstance(v, (bytes, memoryview)) else v for v in row)

    # -- alarm, lifecycle --------------------------------------------------------------

    def alarm_set(self, at_ms: int) -> None:
        self.calls["alarm_set"] += 1
        if self.fail_when is not None and self.fail_when("alarm_set", ""):
            raise StoreFault("injected fault in alarm_set")
        self.alarm = max(0, at_ms)
        self.alarm_touched = True

    def alarm_get(self) -> int | None:
        return self.alarm

    def alarm_clear(self) -> None:
        self.alarm = None
        self.alarm_touched = True

    def now(self) -> int:
        self.calls["now"] += 1
        return self.clock.now()

    def delete_self(self) -> None:
        self.deleted = True

    def self_ref(self) -> tuple[str, str]:
        return self.ref

    @property
    def trap(self) -> str | None:
        return None if self.trap_info is None else self.trap_info.message

    @trap.setter
    def trap(self, message: str | None) -> None:
        """A trap's message alone: its kind "unknown", as a host that kept only the text
        tells it."""
        self.trap_info = None if message is None else LastTrap(TRAP_UNKNOWN, message)

    def last_trap(self) -> str | None:
        self.trap_read = True
        return self.trap

    def last_trap_info(self) -> LastTrap | None:
        self.trap_read = True
        return self.trap_info

    def fuel_used(self) -> int:
        return self.fuel

    def now_and_fuel(self) -> tuple[int, int]:
        self.calls["now_and_fuel"] += 1
        return self.clock.now(), self.fuel

    def memory_bytes(self) -> int | None:
        return self.memory

    def holder(self) -> str:
        return self.holder_name

    def narrow_deadline(self, within_ms: int | None) -> None:
        """Recorded, not enforced (a fake cannot cut Python code): `deadlines` holds each
        call's argument, and `deadline_at` the bound now on the FakeClock, or None."""
        self.calls["narrow_deadline"] += 1
        self.deadlines.append(within_ms)
        self.deadline_at = None if within_ms is None else self.clock.now() + within_ms

    def publish(self, status: str, updated_ms: int,
                labels: Mapping[str, str] | None = None) -> None:
        self.calls["publish"] += 1
        kept = dict(labels) if labels is not None else (
            self.published[2] if self.published else {})
        self.published = (status, updated_ms, kept)

    def log(self, level: str, message: str, fields: Mapping[str, Any]) -> None:
        """Kept in `logged`: (level, message, fields as the host gets them)."""
        self.calls["log"] += 1
        self.logged.append((level, message,
                            {k: str(v) for k, v in fields.items() if v is not None}))

    def tracing(self) -> bool:
        self.calls["tracing"] += 1
        return bool(self.traceparent)

    def trace_current(self) -> str:
        """`traceparent`: "" (not traced) unless a test sets it."""
        self.calls["trace_current"] += 1
        return self.traceparent

    def span_begin(self, name: str, parent: str, attributes: list[tuple[str, str]]) -> int:
        """Kept in `spans` (a list: name, parent, attributes, then at its end its end's
        attributes and error), if traced: its handle is its place there, plus 1."""
        if not self.traceparent:
            return 0
        self.spans.append([name, parent, dict(attributes), None, None])
        return len(self.spans)

    def span_end(self, span: int, attributes: list[tuple[str, str]],
                 error: tuple[str, str, str] | None) -> None:
        self.spans[span - 1][3:] = [dict(attributes), error]

    def count(self, name: str, labels: Labels, value: float = 1) -> None:
        """Kept in `counted`."""
        self.calls["count"] += 1
        self.counted.append(("add", name, dict(labels), value))

    def observe(self, name: str, labels: Labels, value: float) -> None:
        self.calls["observe"] += 1
        self.counted.append(("observe", name, dict(labels), value))

    def call(self, cls: str, id: str, method: str, path: str, body: bytes) -> tuple[int, bytes]:
        self.calls["call"] += 1
        if self.caller is None:
            raise CallFailed("this FakeBackend reaches no other actor (no FakeHost)")
        return self.caller(cls, id, method, path, body)

    # -- for tests ---------------------------------------------------------------------

    def power_loss(self) -> None:
        """Lose everything written after the last durability point (an exec_durable, or
        a COMMIT through it), the alarm included."""
        data, alarm = self._durable
        if data is None:  # nothing was ever durable: an empty database
            self.conn = sqlite3.connect(":memory:", isolation_level=None,
                                        check_same_thread=False)
        else:
            self.conn.deserialize(data)
        self.alarm = alarm

    def rollback_open(self) -> None:
        """What the host does when an event ends with a transaction open (or traps)."""
        if self.conn.in_transaction:
            self.conn.execute("ROLLBACK")

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Read directly (tests only; not counted as a runner call)."""
        return list(self.conn.execute(sql, tuple(params)).fetchall())


def _packed(v: Any) -> Any:
    if isinstance(v, bytes):
        return {"b64": base64.b64encode(v).decode("ascii")}
    return v
