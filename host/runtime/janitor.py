"""The janitor: once a second, until the host stops, the host's round of letting go
(idle actors, spare instances, the pool's idle pages: a callback, since the janitor
knows no actor), then the heap's trim when that round freed enough (memory.py)."""

from __future__ import annotations

import threading
from collections.abc import Callable

from .memory import HeapTrim


class Janitor:
    def __init__(self, stopping: threading.Event, tidy: Callable[[HeapTrim], None]) -> None:
        self._stopping = stopping
        self._tidy = tidy

    def start(self) -> None:
        threading.Thread(target=self._run, name="wk-janitor", daemon=True).start()

    def _run(self) -> None:
        trim = HeapTrim()
        while not self._stopping.wait(1.0):
            self._tidy(trim)
            trim.trim_if_due()
