"""`python -m bench --quick`'s check: each ratio of this run beside the last saved run's.

A ratio is wkhost's figure over a peer's, measured in the same run (the combined table of
bench/__main__.py), so that the machine's drift cancels out. Each is printed beside the
baseline's (bench/results/latest.json, the last full run, or `--baseline FILE`), and
flagged when it got worse by more than this run's own spread: the width of the ratio's
range over this run's repeats (wkhost's min..max of its repeats' medians against the
peer's max..min). A ratio got worse when it fell, for a figure where higher is better
(workflows a second), and when it rose, for one where lower is better (a latency).

A row without a peer's figure in this run (the peers not installed) is compared on
wkhost's own figure instead, the same way, and says so: that one moves with the
machine's speed too. A figure without a spread (one sample, as in a smoke run) is
printed, not judged.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.common import fmt_us

PEERS = ("dbos", "restate")
ALONE = "own figure"


@dataclass(frozen=True)
class Change:
    workload: str
    against: str  # a peer's name, or ALONE
    now: float
    low: float | None  # this run's spread, None when a figure has none
    high: float | None
    before: float | None  # the baseline's, None when it has no such row
    better: str  # "higher" or "lower"
    unit: str = ""  # of an own figure (a ratio has none)

    @property
    def worse_by(self) -> float | None:
        """How far it moved the wrong way since the baseline (negative: it improved)."""
        if self.before is None:
            return None
        return self.before - self.now if self.better == "higher" else self.now - self.before

    @property
    def flagged(self) -> bool:
        worse = self.worse_by
        if worse is None or self.low is None or self.high is None:
            return False
        return worse > self.high - self.low


def _spread(v: Any) -> tuple[float, float, float] | None:
    """(median, min, max) of a figure; None for a number alone, one sample, or nothing."""
    if isinstance(v, dict) and v.get("median") is not None and v.get("n", 2) >= 2:
        m = float(v["median"])
        if v.get("min") is not None and v.get("max") is not None:
            return m, float(v["min"]), float(v["max"])
    return None


def _median(v: Any) -> float | None:
    if isinstance(v, dict):
        return None if v.get("median") is None else float(v["median"])
    return None if v is None else float(v)


def ratio_range(mine: Any, theirs: Any) -> tuple[float, float] | None:
    """The ratio's range over the two figures' spreads: mine's least over theirs' most,
    mine's most over theirs' least."""
    a, b = _spread(mine), _spread(theirs)
    if a is None or b is None or b[1] <= 0:
        return None
    return a[1] / b[2], a[2] / b[1]


def changes(rows: list[dict[str, Any]], baseline: list[dict[str, Any]]) -> list[Change]:
    """One Change per ratio of `rows` (the combined table), or per row's own figure when
    it has no ratio, each beside the same row of `baseline`."""
    before = {r["workload"]: r for r in baseline}
    out: list[Change] = []
    for r in rows:
        old = before.get(r["workload"], {})
        better = r.get("better", "lower")
        ratios = [p for p in PEERS if r.get(f"x_{p}")]
        for p in ratios:
            span = ratio_range(r["wkhost"], r.get(p))
            out.append(Change(r["workload"], p, float(r[f"x_{p}"]),
                              span[0] if span else None, span[1] if span else None,
                              _median(old.get(f"x_{p}")), better))
        if not ratios:
            now = _median(r["wkhost"])
            if now is None:
                continue
            own = _spread(r["wkhost"])
            out.append(Change(r["workload"], ALONE, now, own[1] if own else None,
                              own[2] if own else None, _median(old.get("wkhost")), better,
                              r.get("unit", "")))
    return out


def load_baseline(path: Path) -> tuple[list[dict[str, Any]], str]:
    """The combined table of a saved run (latest.json's shape), and when it ran."""
    doc = json.loads(path.read_text())
    rows: list[dict[str, Any]] = doc.get("figures", {}).get("combined", [])
    return rows, str(doc.get("when", "?"))


def _num(x: float | None, unit: str | None) -> str:
    """A ratio (unit None) or an own figure in its unit."""
    if x is None:
        return "-"
    if unit is None:
        return f"{x:.2f}x"
    if unit == "us":
        return fmt_us(x)
    if unit == "/s":
        return f"{x:,.0f}/s"
    return f"{x:,.1f} {unit}" if unit else f"{x:g}"


def report(found: list[Change], baseline: str, say: Any = print) -> int:
    """Print each change; the number flagged."""
    say(f"\n== this run beside {baseline}: each ratio (wkhost / peer) now, its spread "
        f"in this run, and before; FELL: worse by more than that spread")
    wide = max([40, *(len(c.workload) for c in found)])
    say(f"  {'workload':<{wide}} {'against':<10} {'now':>10} {'(spread)':>23} {'before':>10}")
    for c in found:
        unit = None if c.against != ALONE else c.unit
        spread = (f"({_num(c.low, unit)}..{_num(c.high, unit)})" if c.low is not None
                  else "(no spread)")
        note = ""
        if c.flagged:
            note = "  FELL past the spread"
        elif c.before is None:
            note = "  (not in the baseline)"
        say(f"  {c.workload:<{wide}} {c.against:<10} {_num(c.now, unit):>10} {spread:>23} "
            f"{_num(c.before, unit):>10}{note}")
    flagged = sum(c.flagged for c in found)
    say(f"  {flagged} of {len(found)} fell by more than this run's spread")
    return flagged
