"""A test clock: guest time that moves only when a test says so (`serve --fake-clock`,
then `POST /_wk/clock/advance?ms=N`).

Served on a data directory, it never goes back across a restart: each time it moves,
its time is written to DATA/_host/fake-clock (fsynced before the move is seen), and it
starts at the later of that time and the real one. A test that moved a host a day ahead
and restarts it finds the day still there, as the alarms and the times its actors
recorded are; a clock never moved starts at the real time, as before.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
from pathlib import Path

from ..clock import Clock

FILE = "fake-clock"  # in DATA/_host
_WIDTH = 20  # digits: every write is the same size, over the last, in one block


class FakeClock(Clock):
    """A clock that moves only forward and only when told. Thread-safe.

    `kept`: the file its time is kept in (see the module's doc); None keeps it nowhere."""

    def __init__(self, start_ms: int | None = None, kept: Path | None = None) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._kept = kept
        start = time.time_ns() // 1_000_000 if start_ms is None else start_ms
        self._now = self._keep(start)

    @classmethod
    def served_on(cls, data_dir: Path, start_ms: int | None = None) -> FakeClock:
        """The clock of `serve --fake-clock --data DATA`, kept in DATA/_host/fake-clock."""
        return cls(start_ms, data_dir / "_host" / FILE)

    def now_ms(self) -> int:
        with self._lock:
            return self._now

    def jump(self, ms: int) -> int:
        """Move forward by `ms` (never back) and wake whoever waits on the time."""
        if ms < 0:
            raise ValueError("a clock only moves forward")
        with self._lock:
            self._now = self._keep(self._now + ms)
            now = self._now
        self._notify()
        return now

    def set(self, at_ms: int) -> int:
        with self._lock:
            if at_ms > self._now:
                self._now = self._keep(at_ms)
            now = self._now
        self._notify()
        return now

    def _keep(self, at_ms: int) -> int:
        """Write `at_ms` to the kept file, unless it holds a later time already (another
        process of `--processes N` wrote it); that time, the later of the two."""
        if self._kept is None:
            return at_ms
        self._kept.parent.mkdir(parents=True, exist_ok=True)
        made = not self._kept.exists()
        fd = os.open(self._kept, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # the processes of --processes N share it
            latest = max(at_ms, _read(fd))
            os.pwrite(fd, f"{latest:0{_WIDTH}d}\n".encode(), 0)
            os.fsync(fd)
        finally:
            os.close(fd)  # and its lock
        if made:  # its name too, so that a power loss keeps the file
            _sync_dir(self._kept.parent)
        return latest


def _read(fd: int) -> int:
    """The time in the kept file; 0 for a new file (or one not written whole)."""
    text = os.pread(fd, _WIDTH + 1, 0)
    return int(text) if len(text) == _WIDTH + 1 and text[:_WIDTH].isdigit() else 0


def _sync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
