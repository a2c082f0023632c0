"""What guests count (WIT `metrics`): counters and histograms of their own, in the host's
metrics (`/_wk/metrics`) as `wkguest_<name>`, each series labelled with the actor's
class beside the labels the guest gave.

The host gives them no meaning: the workflow runner counts its workflows through them
(guest_sdk/wkguest/workflow/core/counted.py), an app anything it likes. A guest sends
its samples as one text per call (`submit`), a sample a line (world.wit has the format),
and controls every name, label and value in it, so each is bounded here; a sample out of
bounds is dropped and counted in `wkhost_guest_samples_refused_total{class, reason}`,
and the first of each reason for a class is logged:
- `name`: 1 to 64 characters of [a-z0-9_], beginning with a letter, not ending in
  `_total`, `_count`, `_sum`, `_bucket` or `_created` (the exposition's own endings);
- `labels`: at most MAX_LABELS, each name as a metric's (never `class` or `le`), each
  value at most MAX_VALUE characters, each label written `name=value`;
- `kind`: a family (a name) is a counter or a histogram, with the label names of its first
  sample in this process: a sample of the other kind, or with other label names, is
  refused;
- `series`: at most MAX_SERIES series per class, all its families together: a new series
  past that is refused, and the ones counted go on;
- `value`: a counter adds a finite number >= 0, a histogram observes a finite number;
- `size`: a call's text holds at most MAX_TEXT characters and MAX_SAMPLES samples.
A histogram's buckets follow its name's unit (`_seconds`, `_bytes`, anything else a
count's).

Why a text: the guest's cost. A guest's Python runs interpreted in wasm, where lowering a
list of records (or naming each series to the host once per instance: a workflow is a new
actor, so a new instance, each time) cost a step more than its own bookkeeping. One
string is one copy; the host splits it in C.

The hot path: a line whose series this class sent before is a dict lookup, a float()
and a Tally note (host/tally.py: no lock); only a series' first line takes the lock.
"""

from __future__ import annotations

import logging
import math
import re
import threading
from collections.abc import Iterator
from typing import cast

from prometheus_client import Counter
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from . import metrics
from .tally import Tally, buckets

PREFIX = "wkguest_"
MAX_NAME = 64
MAX_LABELS = 4
MAX_VALUE = 128
MAX_SERIES = 500
MAX_SAMPLES = 10_000  # of one call
MAX_TEXT = 1 << 20  # characters of one call

COUNTER, HISTOGRAM = "counter", "histogram"
_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}\Z")
_LABEL = re.compile(r"[a-z][a-z0-9_]{0,63}\Z")
_ENDINGS = ("_total", "_count", "_sum", "_bucket", "_created")
_RESERVED_LABELS = frozenset({"class", "le"})

# A histogram's buckets, by its name's unit: a step or a request (ms to an hour), a
# size, or a count (attempts, items).
_SECONDS = (.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600)
_BYTES = tuple(float(4 ** k) for k in range(5, 16))  # 1 KiB to 1 GiB
_COUNT = (1, 2, 3, 4, 5, 7, 10, 20, 50, 100, 1000)

Labels = tuple[tuple[str, str], ...]
Key = tuple[str, str, Labels]  # (class, name, labels)

REFUSED = Counter("wkhost_guest_samples_refused", "Samples guests gave the metrics "
                  "interface that the host dropped, by class and reason (name, labels, "
                  "kind, series, value, size)", ("class", "reason"), registry=metrics.REGISTRY)
KINDS = {"c": "counter", "h": "histogram"}
log = logging.getLogger("wkhost")


class Refused(ValueError):
    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def unit_of(name: str) -> str:
    """The unit a histogram's name ends in ("seconds", "bytes"), or "" (a count)."""
    for unit in ("seconds", "bytes"):
        if name.endswith("_" + unit):
            return unit
    return ""


class GuestMetrics:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._families: dict[str, tuple[str, tuple[str, ...]]] = {}  # name: kind, labels
        # (class, kind's letter, series as the line has it): the series, and its Tally
        self._known: dict[tuple[str, str, str], tuple[Key, Tally]] = {}
        self._per_class: dict[str, int] = {}
        self._warned: set[tuple[str, str]] = set()  # (class, reason) logged once
        self.counters = Tally(())
        self._histograms = {"seconds": Tally(_SECONDS), "bytes": Tally(_BYTES),
                            "": Tally(_COUNT)}

    def submit(self, cls: str, text: str) -> int:
        """Class `cls`'s samples, one per line of `text` (world.wit's format). Returns
        how many were refused (each dropped, and counted by its reason)."""
        if len(text) > MAX_TEXT:
            return self._refused(cls, "size", text.count("\n") + 1,
                                 f"a call's samples hold at most {MAX_TEXT} characters")
        lines = text.split("\n")
        refused = 0
        if len(lines) > MAX_SAMPLES:
            refused += self._refused(cls, "size", len(lines) - MAX_SAMPLES,
                                     f"a call holds at most {MAX_SAMPLES} samples")
            del lines[MAX_SAMPLES:]
        known = self._known
        for line in lines:
            kind, _, rest = line.partition(" ")
            value_text, _, series = rest.partition(" ")
            got = known.get((cls, kind, series))
            if got is None:
                try:
                    got = self._first(cls, kind, series)
                except Refused as e:
                    refused += self._refused(cls, e.reason, 1, str(e))
                    continue
            try:
                value = float(value_text)
            except ValueError:
                value = math.nan
            if not (0 <= value < math.inf if kind == "c" else -math.inf < value < math.inf):
                refused += self._refused(cls, "value", 1, f"{KINDS[kind]} {series[:80]!r} "
                                         f"takes a finite number"
                                         + (" >= 0" if kind == "c" else "")
                                         + f", not {value_text[:40]!r}")
                continue
            got[1].note(got[0], value)
        return refused

    def _first(self, cls: str, kind: str, series: str) -> tuple[Key, Tally]:
        """A series' first line: checked, then known (or refused)."""
        if kind not in KINDS:
            raise Refused("name", f"a sample begins with c or h, not {kind[:20]!r}")
        name, *pairs = series.split("\t")
        labels: Labels = tuple(_pair(p) for p in pairs)
        names = tuple(k for k, _ in labels)
        _check(name, pairs, labels, names)
        wanted = KINDS[kind]
        with self._lock:
            family = self._families.setdefault(name, (wanted, names))
            if family[0] != wanted:
                raise Refused("kind", f"{name!r} is a {family[0]} here, not a {wanted}")
            if family[1] != names:
                raise Refused("labels", f"{name!r} has the labels {family[1]}, not {names}")
            got = self._known.get((cls, kind, series))
            if got is not None:
                return got
            if self._per_class.get(cls, 0) >= MAX_SERIES:
                raise Refused("series", f"class {cls!r} has {MAX_SERIES} series, the most "
                              f"it may have")
            self._per_class[cls] = self._per_class.get(cls, 0) + 1
            tally = self.counters if kind == "c" else self._histograms[unit_of(name)]
            got = self._known[(cls, kind, series)] = ((cls, name, labels), tally)
            return got

    def _refused(self, cls: str, reason: str, n: int, why: str) -> int:
        REFUSED.labels(cls, reason).inc(n)
        if (cls, reason) not in self._warned:
            self._warned.add((cls, reason))
            log.warning("metrics: class %s: a sample refused: %s (each one refused is "
                        "counted in wkhost_guest_samples_refused_total)", cls, why)
        return n

    def series_of(self, cls: str) -> int:
        """How many series class `cls` has (MAX_SERIES at most)."""
        return self._per_class.get(cls, 0)

    def families(self) -> Iterator[Metric]:
        """Every family, as Prometheus's: a name's series over all classes."""
        with self._lock:
            families = dict(self._families)
        counters: dict[str, CounterMetricFamily] = {}
        histograms: dict[str, HistogramMetricFamily] = {}
        for name, (kind, label_names) in families.items():
            labels = ("class", *label_names)
            if kind == COUNTER:
                counters[name] = CounterMetricFamily(
                    PREFIX + name, "Counted by actors (WIT metrics)", labels=labels)
            else:
                histograms[name] = HistogramMetricFamily(
                    PREFIX + name, "Observed by actors (WIT metrics)", labels=labels,
                    unit=unit_of(name))
        for key, row in self.counters.totals().items():
            cls, name, pairs = cast(Key, key)
            counters[name].add_metric([cls, *(v for _, v in pairs)], row[1])
        for tally in self._histograms.values():
            for key, row in tally.totals().items():
                cls, name, pairs = cast(Key, key)
                histograms[name].add_metric([cls, *(v for _, v in pairs)],
                                            list(buckets(tally.bounds, row)), sum_value=row[1])
        yield from counters.values()
        yield from histograms.values()


def _pair(label: str) -> tuple[str, str]:
    name, _, value = label.partition("=")
    return name, value


def _check(name: str, pairs: list[str], labels: Labels, names: tuple[str, ...]) -> None:
    if not _NAME.match(name) or name.endswith(_ENDINGS):
        raise Refused("name", f"a metric's name is 1 to {MAX_NAME} characters of "
                      f"[a-z0-9_], beginning with a letter and not ending in "
                      f"{', '.join(_ENDINGS)}: not {name[:80]!r}")
    if len(labels) > MAX_LABELS:
        raise Refused("labels", f"at most {MAX_LABELS} labels, not {len(labels)}")
    if len(set(names)) != len(names):
        raise Refused("labels", f"a label named twice: {names}")
    for pair, (k, v) in zip(pairs, labels, strict=True):
        if "=" not in pair:
            raise Refused("labels", f"a label is written name=value, not {pair[:80]!r}")
        if not _LABEL.match(k) or k in _RESERVED_LABELS:
            raise Refused("labels", f"a label's name is as a metric's, and not "
                          f"{' or '.join(sorted(_RESERVED_LABELS))}: not {k[:80]!r}")
        if len(v) > MAX_VALUE:
            raise Refused("labels", f"label {k!r}'s value has {len(v)} characters, more "
                          f"than {MAX_VALUE}")


GUEST = GuestMetrics()


class _Collector(Collector):
    def collect(self) -> Iterator[Metric]:
        return GUEST.families()


metrics.REGISTRY.register(_Collector())
