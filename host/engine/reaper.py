"""Instances let go, dropped on a thread of their own.

Dropping an instance frees its Store: wasmtime resets its pooled slot (it writes the
slot's resident pages back to the component's image) and frees its core instances, which
takes milliseconds, most of it without the GIL. A new actor's event that lets the least
recently used actor go to make room (events/eviction.py) need not wait for that: it hands
the instance here. What waits for the drops to be done (`settle`): a retry after the pool
was full, the memory budget's next measure, the host's close.
"""

from __future__ import annotations

import queue
import threading
from typing import Any

# Instances waiting to be dropped, at most: past it, the caller drops its own (a burst
# must not pile instances up faster than the thread drops them).
MAX_WAITING = 8
_STOP = object()


class Reaper:
    def __init__(self) -> None:
        self._waiting: queue.Queue[Any] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def drop(self, inst: Any) -> bool:
        """Hand `inst` over to be dropped; False (the caller's reference drops it) when
        enough wait already. The caller keeps no reference of its own."""
        if self._waiting.qsize() >= MAX_WAITING:
            return False
        if self._thread is None:
            self._start()
        self._waiting.put(inst)
        return True

    def settle(self) -> None:
        """Return once every instance handed over has been dropped."""
        self._waiting.join()

    def stop(self) -> None:
        """Drop what waits, then end the thread (the host's close)."""
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is not None:
            self._waiting.put(_STOP)
            thread.join()

    def _start(self) -> None:
        with self._lock:
            if self._thread is None:
                # A daemon: what waits at exit is memory the process gives back anyway.
                self._thread = threading.Thread(target=self._run, name="wk-reaper",
                                                daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while True:
            inst = self._waiting.get()
            stop = inst is _STOP
            del inst  # the last reference: the Store goes here
            self._waiting.task_done()
            if stop:
                return
