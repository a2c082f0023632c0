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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ..errors import CallError, CallErrorKind
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

    def count(self, name: str, labels: Labels, value: float = 1) -> None:
        """Add `value` to the guest counter `name` with `labels` (WIT metrics.add): never
        raises, a sample the host refuses is counted there, and dropped."""

    def observe(self, name: str, labels: Labels, value: float) -> None:
        """One observation of the guest histogram `name` (WIT metrics.observe), as
        `count` never raising."""

    def call(self, cls: str, id: str, method: str, path: str, body: bytes) -> tuple[int, bytes]:
        """A wk-workflow/v1 request to actor `cls`/`id`'s handle: (status, body).
        Raises CallFailed if the call itself failed."""


class RealBackend:
    """The Backend inside a component.

    componentize-py snapshots the interpreter after importing the app, and a module
    first imported later is not found. So the binding-backed modules are imported here,
    in the constructor, which `workflow.serve` runs while the app module is imported;
    the rest of the workflow package stays importable on plain CPython.
    """

    def __init__(self) -> None:
        from wkguest import actors, alarm, attributes, errors, lifecycle, log, metrics, sqlite

        from .status import CONTENT_TYPE, PROTOCOL

        self._sqlite: Any = sqlite
        self._actors: Any = actors
        self._call_error: type[CallError] = errors.CallError
        # As the Client's calls (client.py): the host delivers them only to a class that
        # declares the workflow protocol.
        self._headers = [("content-type", CONTENT_TYPE), ("wk-protocol", PROTOCOL)]
        self._alarm: Any = alarm
        self._lifecycle: Any = lifecycle
        self._attributes: Any = attributes
        self._log: Any = log
        self._kept: Any = metrics.Kept()
        self._errors: tuple[type[Exception], ...] = (errors.SqliteError, errors.AlarmError)

    # The runner's writes need only their changes: `sqlite.write` leaves the rows behind.
    def exec(self, sql: str, params: Sequence[Param] = ()) -> int:
        try:
            return int(self._sqlite.write(sql, params))
        except self._errors as e:
            raise StoreFault(f"sqlite: {e}") from None

    def exec_durable(self, sql: str, params: Sequence[Param] = ()) -> int:
        try:
            return int(self._sqlite.write(sql, params, durable=True))
        except self._errors as e:
            raise StoreFault(f"sqlite: {e}") from None

    def exec_many(self, writes: Sequence[tuple[str, Sequence[Param]]]) -> int:
        # The host binds a script's parameters across its statements, in order.
        sql = "; ".join(w[0] for w in writes)
        params = [p for w in writes for p in w[1]]
        try:
            return int(self._sqlite.write(sql, params))
        except self._errors as e:
            raise StoreFault(f"sqlite: {e}") from None

    def query_packed(self, sql: str, params: Sequence[Param] = ()) -> str:
        try:
            return str(self._sqlite.query_packed(sql, params))
        except self._errors as e:
            raise StoreFault(f"sqlite: {e}") from None

    def query_row(self, sql: str, params: Sequence[Param] = ()) -> tuple[Any, ...] | None:
        try:
            rows = self._sqlite.exec(sql, params).rows
        except self._errors as e:
            raise StoreFault(f"sqlite: {e}") from None
        return rows[0] if rows else None

    def alarm_set(self, at_ms: int) -> None:
        try:
            self._alarm.set(max(0, at_ms))
        except self._errors as e:
            raise StoreFault(f"alarm: {e}") from None

    def alarm_get(self) -> int | None:
        at = self._alarm.get()
        return None if at is None else int(at)

    def alarm_clear(self) -> None:
        try:
            self._alarm.clear()
        except self._errors as e:
            raise StoreFault(f"alarm: {e}") from None

    def now(self) -> int:
        return int(self._lifecycle.now())

    def delete_self(self) -> None:
        self._lifecycle.delete_self()

    def self_ref(self) -> tuple[str, str]:
        ref = self._lifecycle.self_ref()
        return str(ref.cls), str(ref.id)

    def last_trap(self) -> str | None:
        reason = self._lifecycle.last_trap()
        return None if reason is None else str(reason)

    def last_trap_info(self) -> LastTrap | None:
        info = self._lifecycle.last_trap_info()
        if info is None:
            return None
        e = info.exception
        return LastTrap(str(info.kind.value), str(info.message),
                        None if e is None else (str(e.type_name), str(e.message),
                                                str(e.traceback)))

    def fuel_used(self) -> int:
        return int(self._lifecycle.fuel_used())

    def now_and_fuel(self) -> tuple[int, int]:
        return self._lifecycle.now_and_fuel()  # type: ignore[no-any-return]

    def memory_bytes(self) -> int | None:
        return None

    def holder(self) -> str:
        return str(self._lifecycle.holder())

    def narrow_deadline(self, within_ms: int | None) -> None:
        self._lifecycle.narrow_deadline(within_ms)

    def publish(self, status: str, updated_ms: int,
                labels: Mapping[str, str] | None = None) -> None:
        try:
            self._attributes.publish(status, updated_ms, labels)
        except self._attributes.PublishError as e:
            raise StoreFault(f"attributes: {e}") from None

    def log(self, level: str, message: str, fields: Mapping[str, Any]) -> None:
        self._log.write(level, message, **fields)

    def count(self, name: str, labels: Labels, value: float = 1) -> None:
        self._kept.add(name, labels, value)

    def observe(self, name: str, labels: Labels, value: float) -> None:
        self._kept.observe(name, labels, value)

    def call(self, cls: str, id: str, method: str, path: str, body: bytes) -> tuple[int, bytes]:
        try:
            r = self._actors.call(cls, id, method, path, body, self._headers)
        except self._call_error as e:
            raise CallFailed(e.reason, e.kind) from None
        return int(r.status), bytes(r.body)
