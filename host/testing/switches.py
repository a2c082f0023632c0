"""A host's test-only switches, in one object.

Three things exist only so that tests can reach a moment or a time: crash points (a
SIGKILL at a named moment, armed from the environment: testing/crashpoints.py), the
fake clock (moved by an operator's request), and always-fresh instances (every event on
a new instance, to prove replay from storage alone). Production code reads them here,
never from the environment or by the clock's type, so that each is found in one place.
"""

from __future__ import annotations

from ..clock import Clock
from . import crashpoints
from .clock import FakeClock


class NoFakeClock(Exception):
    """The clock moves only on a host started with --fake-clock."""


class Switches:
    """`always_fresh_instance` starts as HostConfig's and may be flipped while the host
    runs (bench/bench_workflows.py times the same replay warm and fresh)."""

    __slots__ = ("fake_clock", "always_fresh_instance")

    # Read once per process: crash points are armed in the environment of a child.
    crash_armed = crashpoints.ARMED

    def __init__(self, clock: Clock, always_fresh_instance: bool = False) -> None:
        self.fake_clock = clock if isinstance(clock, FakeClock) else None
        self.always_fresh_instance = always_fresh_instance

    @staticmethod
    def crash(point: str) -> None:
        """SIGKILL this process here if `point` is the armed one (and its turn has come)."""
        crashpoints.hit(point)

    def advance_clock(self, ms: int) -> int:
        """Move the fake clock forward by `ms`; its new time. NoFakeClock without one."""
        if self.fake_clock is None:
            raise NoFakeClock("the clock moves only on a host started with --fake-clock")
        return self.fake_clock.jump(ms)

    def set_clock(self, at_ms: int) -> int:
        """Bring the fake clock to `at_ms` unless it is past it (another process's time)."""
        if self.fake_clock is None:
            raise NoFakeClock("no test clock here")
        return self.fake_clock.set(at_ms)
