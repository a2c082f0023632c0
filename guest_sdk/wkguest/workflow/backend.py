"""The runner's only door to the host: a small `Backend` protocol.

The replay core and the runner import no bindings; they do every bit of I/O through one
Backend. `RealBackend` is the one compiled into a guest (over `wkguest.sqlite`, `alarm`
and `lifecycle`); `wkguest.workflow.testing.FakeBackend` is the one unit tests use, on the
stdlib's sqlite3 with a clock that tests move.

`call` is the one request to another actor (child workflows, children/calls.py and
children/notices.py): a failed call raises CallFailed, an ordinary Exception (a step's
attempt retries it).

Contract: a storage call (exec, exec_durable, query_packed, query_row, alarm_set,
alarm_clear) that fails raises StoreFault, a BaseException, so that no user `except
Exception` can mistake the runner's own database trouble for a step's error. `now` is the
host's clock in ms.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from ..errors import CallErrorKind
from .errors import StoreFault

Param = None | int | float | str | bytes
Labels = tuple[tuple[str, str], ...]  # a metric's labels, as (name, value) pairs


class CallFailed(Exception):
    """A call to another actor failed (refused: re-entry, a cycle, backpressure; an
    unknown class; the callee trapped; the deadline passed): the host's reason, and
    `kind`, the host's word for which (wkguest.errors.CallErrorKind)."""

    def __init__(self, reason: str, kind: CallErrorKind = "other") -> None:
        super().__init__(reason)
        self.kind: CallErrorKind = kind


# The kinds of a trap the runner tells apart (wkguest.lifecycle.TrapKind's values: that
# module imports the bindings, which a native run has not).
TRAP_GUEST = "guest"
TRAP_NARROWED_DEADLINE = "narrowed-deadline"
TRAP_UNKNOWN = "unknown"


@dataclass(frozen=True)
class LastTrap:
    """Why this actor's last trapped (or cut) event ended, as the host keeps it
    (lifecycle.last-trap-info): `kind` is `wkguest.lifecycle.TrapKind`'s value ("cpu",
    "wall", "narrowed-deadline", "memory", "output-flood", "guest", "host", "unknown"),
    `message` the one line `last_trap` gives, and `exception` what the guest reported
    before it trapped, if anything: its type's name, message and traceback."""

    kind: str
    message: str
    exception: tuple[str, str, str] | None = None


class Backend(Protocol):
    def exec(self, sql: str, params: Sequence[Param] = ()) -> int:
        """Run a statement (committed like `sqlite.exec`); return the rows it changed."""

    def exec_durable(self, sql: str, params: Sequence[Param] = ()) -> int:
        """As `exec`, fsynced before it returns (at COMMIT inside a transaction)."""

    def exec_many(self, writes: Sequence[tuple[str, Sequence[Param]]]) -> int:
        """`writes` in order, in one call (as one ";"-separated script, each statement's
        parameters bound in turn), committed like `exec`: the rows the last one changed."""

    def query_packed(self, sql: str, params: Sequence[Param] = ()) -> str:
        """A read, as the packed JSON: [[columns], [row values], ...]."""

    def query_row(self, sql: str, params: Sequence[Param] = ()) -> tuple[Any, ...] | None:
        """A read's first row, its values crossing one by one, typed: no JSON around a
        big text value, so no escaping to undo. None if there are no rows."""

    def alarm_set(self, at_ms: int) -> None: ...

    def alarm_get(self) -> int | None: ...

    def alarm_clear(self) -> None: ...

    def now(self) -> int:
        """The host's clock, ms since the Unix epoch: the only time the runner reads."""

    def delete_self(self) -> None:
        """Delete this actor once the current event ends."""

    def self_ref(self) -> tuple[str, str]:
        """This actor's (class, id)."""

    def last_trap(self) -> str | None:
        """Why this actor's last trapped event ended, until an event that asked ends."""

    def last_trap_info(self) -> LastTrap | None:
        """`last_trap`'s reason as a value, kept and forgotten with it."""

    def fuel_used(self) -> int:
        """The fuel this call into the guest has burnt so far (lifecycle.fuel-used)."""

    def now_and_fuel(self) -> tuple[int, int]:
        """`now` and `fuel_used` in one call (lifecycle.now-and-fuel)."""

    def memory_bytes(self) -> int | None:
        """The guest's linear memory size now, or None where the host cannot tell (the
        host today: wasmtime-py reaches no memory inside a component)."""

    def holder(self) -> str:
        """Who runs this actor now, to show (lifecycle.holder)."""

    def narrow_deadline(self, within_ms: int | None) -> None:
        """Bound this event's host calls (SQL, actor calls, fetches) and its guest code by
        `within_ms` from now, as well as by the event's own deadline; None lifts the
        bound (lifecycle.narrow-deadline). A step's timeout (core/timeouts.py) sets it around
        each attempt."""

    def publish(self, status: str, updated_ms: int,
                labels: Mapping[str, str] | None = None) -> None:
        """Publish the actor's status for the host's listing (WIT attributes): it commits
        with the next write. Raises StoreFault if the host refused it."""

    def log(self, level: str, message: str, fields: Mapping[str, Any]) -> None:
        """One record in the host's log (WIT log.write), at `level` ("debug", "info",
        "warning", "error"), with `fields` (each value as its str(); None left out)."""

    def tracing(self) -> bool:
        """Whether the host traces (asked of it once per instance)."""

    def trace_current(self) -> str:
        """The current span's W3C `traceparent`, "" when the host does not trace (WIT
        trace.current)."""

    def span_begin(self, name: str, parent: str, attributes: list[tuple[str, str]]) -> int:
        """Begin a span (WIT trace.begin): its handle, 0 if nothing is traced."""

    def span_end(self, span: int, attributes: list[tuple[str, str]],
                 error: tuple[str, str, str] | None) -> None:
        """End span `span` (WIT trace.end), with `error`'s (type, message, traceback)."""

    def count(self, name: str, labels: Labels, value: float = 1) -> None:
        """Add `value` to the guest counter `name` with `labels` (WIT metrics.add): never
        raises, a sample the host refuses is counted there, and dropped."""

    def observe(self, name: str, labels: Labels, value: float) -> None:
        """One observation of the guest histogram `name` (WIT metrics.observe), as
        `count` never raising."""

    def call(self, cls: str, id: str, method: str, path: str, body: bytes) -> tuple[int, bytes]:
        """A wk-workflow/v1 request to actor `cls`/`id`'s handle: (status, body).
        Raises CallFailed if the call itself failed."""


T = TypeVar("T")


def atomically(db: Backend, work: Callable[[], T], begin: str = "BEGIN IMMEDIATE",
               commit: str = "COMMIT", durable: bool = True) -> T:
    """`work()`'s writes in one transaction: `begin`, then `commit`, through exec_durable
    when `durable` (its fsync makes them durable together). If anything raises, they are
    rolled back and the exception goes on (if even the ROLLBACK fails, the host rolls
    back what an event leaves open). `begin` and `commit` may carry a crash point's tag
    (`/*wk:...*/`)."""
    db.exec(begin)
    try:
        out = work()
        if durable:
            db.exec_durable(commit)
        else:
            db.exec(commit)
    except BaseException:
        with contextlib.suppress(StoreFault):
            db.exec("ROLLBACK")
        raise
    return out
