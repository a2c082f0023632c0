"""Backpressure host-wide: how many events wait for an event thread, at most."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

from .. import metrics
from ..config import HostConfig
from ..errors import Overloaded
from .executor import EventExecutor

T = TypeVar("T")


class PendingEvents:
    """Hands work to the event threads, or refuses it at once past the config's
    `max_pending_events` waiting."""

    def __init__(self, executor: EventExecutor, config: HostConfig) -> None:
        self._executor = executor
        self._config = config
        self._count = 0
        self._lock = threading.Lock()

    @property
    def count(self) -> int:
        return self._count

    def submit(self, fn: Callable[..., T], *args: Any) -> Future[T]:
        """Run `fn` on a worker, or refuse at once when too much is queued host-wide."""
        with self._lock:
            if self._count >= self._config.max_pending_events:
                metrics.refused(metrics.HOST_QUEUE)
                raise Overloaded("the host is at its limit of waiting events; retry shortly")
            self._count += 1
        try:
            fut = self._executor.submit(self._counted, fn, *args)
        except RuntimeError:
            self._finish()
            raise Overloaded("the host is shutting down") from None
        # One cancelled at shutdown never runs: count it down here instead.
        fut.add_done_callback(self._count_cancelled)
        return fut

    def wait_empty(self, deadline: float) -> None:
        """Until none is pending, or `deadline` (time.monotonic()) has passed."""
        while self._count > 0 and time.monotonic() < deadline:
            time.sleep(0.01)

    def _count_cancelled(self, fut: Future[Any]) -> None:
        if fut.cancelled():
            self._finish()

    def _counted(self, fn: Callable[..., T], *args: Any) -> T:
        # Counted down on the worker, before the result is handed over, so whoever waits
        # on the result sees the slot free again.
        try:
            return fn(*args)
        finally:
            self._finish()

    def _finish(self) -> None:
        with self._lock:
            self._count -= 1
