"""The Backend inside a component (backend.py's protocol), over the bindings: `wkguest`'s
sqlite, alarm, lifecycle, attributes, log, metrics, trace and actors modules."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import CallError
from .backend import CallFailed, Labels, LastTrap, Param
from .errors import StoreFault


class RealBackend:
    """The Backend inside a component.

    componentize-py snapshots the interpreter after importing the app, and a module
    first imported later is not found. So the binding-backed modules are imported here,
    in the constructor, which `workflow.serve` runs while the app module is imported;
    the rest of the workflow package stays importable on plain CPython.
    """

    def __init__(self) -> None:
        from wkguest import (
            actors,
            alarm,
            attributes,
            errors,
            lifecycle,
            log,
            metrics,
            sqlite,
            trace,
        )

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
        self._trace: Any = trace
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

    def tracing(self) -> bool:
        return self._trace.traced()  # type: ignore[no-any-return]

    def trace_current(self) -> str:
        return self._trace.current()  # type: ignore[no-any-return]

    def span_begin(self, name: str, parent: str, attributes: list[tuple[str, str]]) -> int:
        return self._trace.begin_with(name, parent, attributes)  # type: ignore[no-any-return]

    def span_end(self, span: int, attributes: list[tuple[str, str]],
                 error: tuple[str, str, str] | None) -> None:
        self._trace.end_with(span, attributes, error)

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
