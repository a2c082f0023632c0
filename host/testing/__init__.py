"""Production code that exists for tests: fault injection and test switches, shipped in
every host and imported by storage/, events/, core/ and net/, inert unless a test turns
them on.

- crash points (`crashpoints`): a SIGKILL at a named moment, armed only from the
  environment when the process starts; storage/ calls them at its durable points;
- the fake clock (`clock`, `serve --fake-clock`, moved by an operator's request through
  net/) and always-fresh instances: the events read both, and the crash points, through
  `Switches`, which core/ builds;
- a private PostgreSQL for the cluster's tests and demos (`postgres`, over what it needs
  of the machine: `pg_machine`): no production module imports it.

A test kit for users' own workflows will grow here, from these."""

from .clock import FakeClock
from .switches import NoFakeClock, Switches

__all__ = ["FakeClock", "NoFakeClock", "Switches"]
