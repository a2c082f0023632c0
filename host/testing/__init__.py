"""What exists for tests, in one package: crash points, the fake clock and always-fresh
instances, reached through `TestSwitches`. A test kit for users' own workflows will
grow here, from these."""

from .clock import FakeClock
from .switches import NoFakeClock, TestSwitches

__all__ = ["FakeClock", "NoFakeClock", "TestSwitches"]
