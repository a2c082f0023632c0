"""Plain writes that ride with the next one, in the same call to the host: an attempt's
history row (attempt_history.py) with its step's record, so that a step's end crosses
once, and both commit or neither."""

from __future__ import annotations

from ..backend import Backend, Param


class Carried:
    def __init__(self, db: Backend) -> None:
        self.db = db
        self._writes: list[tuple[str, tuple[Param, ...]]] = []

    def add(self, sql: str, params: tuple[Param, ...]) -> None:
        """A plain write to ride with the next `write`; a read or a durable write first
        writes it alone (`flush`)."""
        self._writes.append((sql, params))

    def write(self, sql: str, params: tuple[Param, ...] = ()) -> None:
        """A plain write, then what is carried, in one call. After it, so that the
        script's first statement is this write's (a crash point names its tag)."""
        if not self._writes:
            self.db.exec(sql, params)
            return
        writes = [(sql, params), *self._writes]
        self._writes.clear()
        self.db.exec_many(writes)

    def flush(self) -> None:
        """Write what is carried, alone."""
        if self._writes:
            writes = list(self._writes)
            self._writes.clear()
            self.db.exec_many(writes)
