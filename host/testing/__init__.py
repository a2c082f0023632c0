"""What exists for tests, in one package: crash points, the fake clock and always-fresh
instances, reached through `Switches`. A test kit for users' own workflows will
grow here, from these."""

from .clock import FakeClock
from .switches import NoFakeClock, Switches

__all__ = ["FakeClock", "NoFakeClock", "Switches"]
