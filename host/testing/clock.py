"""A test clock: guest time that moves only when a test says so (`serve --fake-clock`,
then `POST /_wk/clock/advance?ms=N`)."""

from __future__ import annotations

import threading
import time

from ..clock import Clock


class FakeClock(Clock):
    """A clock that moves only forward and only when told. Thread-safe."""

    def __init__(self, start_ms: int | None = None) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._now = time.time_ns() // 1_000_000 if start_ms is None else start_ms

    def now_ms(self) -> int:
        with self._lock:
            return self._now

    def jump(self, ms: int) -> int:
        """Move forward by `ms` (never back) and wake whoever waits on the time."""
        if ms < 0:
            raise ValueError("a clock only moves forward")
        with self._lock:
            self._now += ms
            now = self._now
        self._notify()
        return now

    def set(self, at_ms: int) -> int:
        with self._lock:
            self._now = max(self._now, at_ms)
            now = self._now
        self._notify()
        return now
