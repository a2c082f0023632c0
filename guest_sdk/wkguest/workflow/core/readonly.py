"""`ReadOnly`: a Backend that reads through and stops at the first thing that would change.

The dry replay (events/dry_replay.py) and a run cancelled with compensation
(saga/cancelling.py) run the workflow function over it: a primitive's new work writes
before it runs any user code (a step's attempt is counted before its function runs), so
the first write, alarm, deletion or call raises `DryStop` before it is made, and no step
function runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..backend import Backend, Labels, Param
from ..errors import WorkflowSignal


class DryStop(WorkflowSignal):
    """The dry replay reached a position that is not recorded: it stops there."""


class ReadOnly:
    """A Backend that reads through and stops at the first thing that would change."""

    def __init__(self, db: Backend) -> None:
        self._db = db

    def _stop(self, what: str) -> DryStop:
        return DryStop(f"a dry replay stops before {what}")

    def exec(self, sql: str, params: Sequence[Param] = ()) -> int:
        raise self._stop("a write")

    def exec_durable(self, sql: str, params: Sequence[Param] = ()) -> int:
        raise self._stop("a write")

    def exec_many(self, writes: Sequence[tuple[str, Sequence[Param]]]) -> int:
        raise self._stop("a write")

    def query_packed(self, sql: str, params: Sequence[Param] = ()) -> str:
        return self._db.query_packed(sql, params)

    def call(self, cls: str, id: str, method: str, path: str, body: bytes
             ) -> tuple[int, bytes]:
        raise self._stop("a call to another actor")  # a child's start, a cancel

    def query_row(self, sql: str, params: Sequence[Param] = ()) -> tuple[Any, ...] | None:
        return self._db.query_row(sql, params)

    def alarm_set(self, at_ms: int) -> None:
        raise self._stop("setting the alarm")

    def alarm_get(self) -> int | None:
        return self._db.alarm_get()

    def alarm_clear(self) -> None:
        raise self._stop("clearing the alarm")

    def now(self) -> int:
        return self._db.now()

    def delete_self(self) -> None:
        raise self._stop("a deletion")

    def self_ref(self) -> tuple[str, str]:
        return self._db.self_ref()

    def last_trap(self) -> None:
        return None  # asking has an effect (the reason is kept until an event asked)

    def last_trap_info(self) -> None:
        return None  # as last_trap

    def fuel_used(self) -> int:
        return self._db.fuel_used()

    def now_and_fuel(self) -> tuple[int, int]:
        return self._db.now_and_fuel()

    def memory_bytes(self) -> int | None:
        return self._db.memory_bytes()

    def holder(self) -> str:
        return self._db.holder()

    def narrow_deadline(self, within_ms: int | None) -> None:
        self._db.narrow_deadline(within_ms)  # a dry replay runs no step: never called

    def publish(self, status: str, updated_ms: int,
                labels: Mapping[str, str] | None = None) -> None:
        raise self._stop("publishing a status")

    def log(self, level: str, message: str, fields: Mapping[str, Any]) -> None:
        """Nothing: a dry replay passes only what was told when it happened (told.py)."""

    def tracing(self) -> bool:
        return False  # a dry replay runs no step: nothing to trace

    def trace_current(self) -> str:
        return ""

    def span_begin(self, name: str, parent: str, attributes: list[tuple[str, str]]) -> int:
        return 0

    def span_end(self, span: int, attributes: list[tuple[str, str]],
                 error: tuple[str, str, str] | None) -> None:
        pass

    def count(self, name: str, labels: Labels, value: float = 1) -> None:
        """Nothing: a dry replay counts nothing again (counted.py)."""

    def observe(self, name: str, labels: Labels, value: float) -> None:
        """Nothing, as `count`."""
