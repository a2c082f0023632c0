"""The host's clock: every guest-visible time comes from here.

Alarm delivery and `lifecycle.now` read `Clock.now_ms()`, so a test that uses
`wkhost.testing.FakeClock` moves guest time by days with `jump()` instead of sleeping.
Budgets and deadlines are not guest-visible: they use the real monotonic clock even under
a fake.
"""

from __future__ import annotations

import time
from collections.abc import Callable


class Clock:
    """Wall time in ms since the Unix epoch, plus a way to be told when it jumps."""

    def __init__(self) -> None:
        self._listeners: list[Callable[[], None]] = []

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def on_jump(self, listener: Callable[[], None]) -> None:
        """Call `listener` whenever the time moves other than by itself (a fake's jump)."""
        self._listeners.append(listener)

    def _notify(self) -> None:
        for listener in list(self._listeners):
            listener()


class SystemClock(Clock):
    """The real clock."""
