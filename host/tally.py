"""Histograms for the hot path (a host call, an event), bumped without a lock.

prometheus_client's own take a lock per bucket, count and sum, and a labelled child's
lookup takes another: microseconds for a counter's bump and more for a histogram's
observation (docs/performance.md), which every host call would pay. A Tally
keeps one table per thread instead, which only that thread writes: an observation is
a dict lookup and three float bumps in its own rows, and none is lost between threads.
A scrape sums the tables (`totals`), reading rows that their threads may be bumping
meanwhile: it may see an observation's count before its sum, never a figure that goes
down.
"""

from __future__ import annotations

import threading
from bisect import bisect_left
from collections.abc import Hashable, Iterator

Row = list[float]  # [count, sum, then one count per bucket: each bound's, then +Inf's]


class Tally:
    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self._width = len(bounds) + 3
        self._tables: list[dict[Hashable, Row]] = []  # every thread's, kept when it ends
        self._lock = threading.Lock()  # taken only by a thread's first observation
        self._local = threading.local()

    def note(self, key: Hashable, value: float) -> None:
        try:
            table: dict[Hashable, Row] = self._local.table
        except AttributeError:
            table = self._new_table()
        row = table.get(key)
        if row is None:
            row = table[key] = [0.0] * self._width
        row[0] += 1
        row[1] += value
        row[2 + bisect_left(self.bounds, value)] += 1

    def _new_table(self) -> dict[Hashable, Row]:
        table: dict[Hashable, Row] = {}
        with self._lock:
            self._tables.append(table)
        self._local.table = table
        return table

    def totals(self) -> dict[Hashable, Row]:
        """Every key's row, summed over the threads."""
        with self._lock:
            tables = list(self._tables)
        out: dict[Hashable, Row] = {}
        for table in tables:
            for key, row in table.copy().items():  # copy(): one step, under the GIL
                into = out.setdefault(key, [0.0] * self._width)
                for i, v in enumerate(row):
                    into[i] += v
        return out


def grouped(totals: dict[Hashable, Row], fields: tuple[int, ...]
            ) -> dict[tuple[object, ...], Row]:
    """`totals` with its keys (tuples) cut down to the items at `fields`, rows summed."""
    out: dict[tuple[object, ...], Row] = {}
    for k, row in totals.items():
        assert isinstance(k, tuple)
        short = tuple(k[i] for i in fields)
        into = out.setdefault(short, [0.0] * len(row))
        for i, v in enumerate(row):
            into[i] += v
    return out


def buckets(bounds: tuple[float, ...], row: Row) -> Iterator[tuple[str, float]]:
    """A row's buckets as Prometheus writes them: cumulative, by upper bound, +Inf last."""
    seen = 0.0
    for bound, n in zip((*(repr(float(b)) for b in bounds), "+Inf"), row[2:], strict=True):
        seen += n
        yield bound, seen
