"""Counters and histograms of the actor's own, in the host's metrics (WIT `metrics`).

    metrics.add("orders_placed", region="eu")              # wkguest_orders_placed_total
    metrics.observe("payment_seconds", 0.42, provider="x")  # wkguest_payment_seconds

The host shows each as `wkguest_<name>`, labelled with the actor's class beside the
labels given here. A name or label out of world.wit's bounds, or a value that is not a
finite number (>= 0 for a counter), raises MetricRefused here, and changes nothing; the
host checks again, and drops and counts what it refuses (a class past its 500 series).

`counter(name, **labels)` and `histogram(...)` give a series to keep, whose samples then
cost an append each (the checks are done once).

Samples are kept until the event ends and then sent in one call (`flush`, which the
actor's export calls): an event that a budget cuts (CPU, wall clock, memory) loses what
it counted.
"""

from __future__ import annotations

import math
import re
from typing import Any

from wkguest import _bindings as _b

__all__ = ["Counter", "Histogram", "MetricRefused", "add", "counter", "histogram", "observe"]

Labels = tuple[tuple[str, str], ...]

# world.wit's bounds, checked here too so that a mistake raises where it is made.
_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}\Z")
_ENDINGS = ("_total", "_count", "_sum", "_bucket", "_created")
_MAX_LABELS, _MAX_VALUE, _CHECKED_MAX = 4, 128, 1000


class MetricRefused(ValueError):
    """A sample out of bounds: its name, labels or value."""


_pending: list[str] = []  # this event's samples, as world.wit's lines
_checked: set[str] = set()  # series checked in this instance (at most _CHECKED_MAX kept)


def add(name: str, value: float = 1, **labels: object) -> None:
    """Add `value` (finite, >= 0) to counter `name`."""
    counter(name, **labels).add(value)


def observe(name: str, value: float, **labels: object) -> None:
    """One observation of histogram `name` (a name ending in `_seconds` or `_bytes` has
    that unit's buckets, any other a count's)."""
    histogram(name, **labels).observe(value)


def counter(name: str, **labels: object) -> Counter:
    """Counter `name` with `labels`, checked once: keep it, and each `add` costs little."""
    return Counter(name, tuple((k, str(v)) for k, v in labels.items()))


def histogram(name: str, **labels: object) -> Histogram:
    """Histogram `name` with `labels`, checked once (as `counter`)."""
    return Histogram(name, tuple((k, str(v)) for k, v in labels.items()))


class Counter:
    __slots__ = ("_series",)

    def __init__(self, name: str, labels: Labels) -> None:
        self._series = _series(name, labels)

    def add(self, value: float = 1) -> None:
        value = float(value)
        if not 0 <= value < math.inf:
            raise MetricRefused(f"a counter adds a finite number >= 0, not {value}")
        _pending.append(f"c {value!r} {self._series}")


class Histogram:
    __slots__ = ("_series",)

    def __init__(self, name: str, labels: Labels) -> None:
        self._series = _series(name, labels)

    def observe(self, value: float) -> None:
        value = float(value)
        if not -math.inf < value < math.inf:
            raise MetricRefused(f"a histogram observes a finite number, not {value}")
        _pending.append(f"h {value!r} {self._series}")


_UNSEEN: Any = object()


class Kept:
    """Series kept by name and labels, for code that counts the same few names again and
    again (the workflow runner), each sample then a lookup and an append. Not checked as
    `counter` checks: each actor is a new instance, whose first samples would pay the
    checks again. The names must be the caller's own constants, in bounds; a label value
    out of bounds (a step's name too long, or with a tab or a newline, which would break
    the line) drops its samples, and raises nothing."""

    def __init__(self) -> None:
        # (kind, name, labels): the line's tail (name and labels), None if out of bounds
        self._series: dict[tuple[str, str, Labels], str | None] = {}

    def add(self, name: str, labels: Labels, value: float = 1) -> None:
        tail = self._series.get(("c", name, labels), _UNSEEN)
        if tail is _UNSEEN:
            tail = self._tail("c", name, labels)
        if tail is not None:
            _pending.append(f"c {value!r} {tail}")

    def observe(self, name: str, labels: Labels, value: float) -> None:
        tail = self._series.get(("h", name, labels), _UNSEEN)
        if tail is _UNSEEN:
            tail = self._tail("h", name, labels)
        if tail is not None:
            _pending.append(f"h {value!r} {tail}")

    def _tail(self, kind: str, name: str, labels: Labels) -> str | None:
        bad = any(len(v) > _MAX_VALUE or "\t" in v or "\n" in v for _, v in labels)
        tail = None if bad else name + "".join(f"\t{k}={v}" for k, v in labels)
        self._series[(kind, name, labels)] = tail
        return tail


def flush() -> None:
    """Send this event's samples to the host (the actor's export calls it as the event
    ends)."""
    if _pending:
        text = "\n".join(_pending)
        _pending.clear()
        _b.metrics.submit(text)


def _series(name: str, labels: Labels) -> str:
    series = name + "".join(f"\t{k}={v}" for k, v in labels)
    if series not in _checked:
        _check(name, labels)
        if len(_checked) < _CHECKED_MAX:
            _checked.add(series)
    return series


def _check(name: str, labels: Labels) -> None:
    if not _NAME.match(name) or name.endswith(_ENDINGS):
        raise MetricRefused(f"a metric's name is 1 to 64 characters of [a-z0-9_], beginning "
                            f"with a letter and not ending in {', '.join(_ENDINGS)}: "
                            f"not {name[:80]!r}")
    if len(labels) > _MAX_LABELS:
        raise MetricRefused(f"at most {_MAX_LABELS} labels, not {len(labels)}")
    for k, v in labels:
        if not _NAME.match(k) or k in ("class", "le"):
            raise MetricRefused(f"a label's name is as a metric's, and not class or le: "
                                f"not {k[:80]!r}")
        if len(v) > _MAX_VALUE or "\t" in v or "\n" in v:
            raise MetricRefused(f"label {k!r}'s value is at most {_MAX_VALUE} characters, "
                                f"with no tab or newline")
