"""Shared by the unit tests of the thread machinery (run gate, event executor)."""

from __future__ import annotations

import time
from collections.abc import Callable

WAIT_S = 10.0


def until(cond: Callable[[], bool]) -> None:
    """Poll `cond` until it holds; fail the test after WAIT_S."""
    deadline = time.monotonic() + WAIT_S
    while not cond():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.001)
