"""Test API for workflows, on plain CPython (never compiled into a guest).

- `FakeClock`, `FakeBackend` (fakes.py): the host's clock and storage, in memory;
- `FakeHost`, `Trap` (host.py): many instances with the host's event rules, a Client over
  them, alarms fired in time order, traps, and an always-replay mode;
- `export_history`, `seed`, `replay`, `load`, `dump` (history.py): recorded histories,
  the golden files of the tests;
- `bench_replay` (bench.py): the native replay benchmark.
"""

from __future__ import annotations

from .bench import ReplayBench, bench_replay
from .fakes import FakeBackend, FakeClock
from .history import dump, export_history, insert_rows, load, replay, seed, status_of
from .host import FakeHost, Instance, Trap

__all__ = [
    "FakeBackend",
    "FakeClock",
    "FakeHost",
    "Instance",
    "ReplayBench",
    "Trap",
    "bench_replay",
    "dump",
    "export_history",
    "insert_rows",
    "load",
    "replay",
    "seed",
    "status_of",
]
