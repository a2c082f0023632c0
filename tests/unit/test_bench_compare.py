"""bench.compare: `python -m bench --quick`'s ratios beside a saved run's, and which it flags
(worse than the baseline by more than this run's own spread), on a fake pair of results."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.compare import ALONE, Change, changes, load_baseline, ratio_range, report


def fig(median: float, low: float, high: float) -> dict[str, float]:
    return {"median": median, "min": low, "max": high, "n": 3}


def row(workload: str, better: str, mine: Any, **peers: Any) -> dict[str, Any]:
    r: dict[str, Any] = {"workload": workload, "unit": "/s", "wkhost": mine, "better": better}
    for name, theirs in peers.items():
        r[name] = theirs
        r[f"x_{name}"] = mine["median"] / theirs["median"]
    return r


THROUGHPUT = "three-step workflows/s, concurrency 32"
STEP = "new durable step (slope N=10..50)"


def test_a_ratio_that_fell_by_more_than_the_spread_is_flagged() -> None:
    # 0.65x Restate before; now 100/s against 200/s = 0.50x, spread 0.45x..0.55x (0.10)
    before = [row(THROUGHPUT, "higher", fig(130, 120, 140), restate=fig(200, 190, 210))]
    now = [row(THROUGHPUT, "higher", fig(100, 95, 105), restate=fig(200, 190, 210))]
    [c] = changes(now, before)
    assert (c.against, c.now, c.before) == ("restate", 0.5, 0.65)
    assert c.low is not None and c.high is not None
    assert round(c.low, 3) == round(95 / 210, 3) and round(c.high, 3) == round(105 / 190, 3)
    assert c.flagged


def test_a_fall_within_the_spread_or_a_rise_is_not_flagged() -> None:
    peer = fig(200, 150, 250)  # a wide spread: 0.38x..0.70x
    before = [row(THROUGHPUT, "higher", fig(130, 120, 140), restate=peer)]
    fell_a_little = [row(THROUGHPUT, "higher", fig(100, 95, 105), restate=peer)]
    assert not changes(fell_a_little, before)[0].flagged
    rose = [row(THROUGHPUT, "higher", fig(200, 190, 210), restate=fig(200, 190, 210))]
    c = changes(rose, before)[0]
    assert c.worse_by is not None and c.worse_by < 0 and not c.flagged


def test_lower_is_better_flags_a_ratio_that_rose() -> None:
    # a durable step: 0.09x DBOS before, 0.17x now (tight spread): that is the loss
    dbos = fig(1000, 990, 1010)
    before = [row(STEP, "lower", fig(90, 88, 92), dbos=dbos)]
    now = [row(STEP, "lower", fig(170, 168, 172), dbos=dbos)]
    [c] = changes(now, before)
    assert c.flagged and c.worse_by is not None and round(c.worse_by, 2) == 0.08
    improved = [row(STEP, "lower", fig(50, 48, 52), dbos=dbos)]
    assert not changes(improved, before)[0].flagged


def test_each_peer_is_a_ratio_of_its_own() -> None:
    before = [row(THROUGHPUT, "higher", fig(130, 125, 135), dbos=fig(100, 99, 101),
                  restate=fig(200, 199, 201))]
    now = [row(THROUGHPUT, "higher", fig(130, 125, 135), dbos=fig(100, 99, 101),
               restate=fig(400, 399, 401))]
    by_peer = {c.against: c for c in changes(now, before)}
    assert not by_peer["dbos"].flagged
    assert by_peer["restate"].flagged


def test_without_a_peer_wkhost_s_own_figure_is_compared_and_said_so() -> None:
    before = [row(THROUGHPUT, "higher", fig(130, 125, 135))]
    now = [row(THROUGHPUT, "higher", fig(100, 98, 102))]
    [c] = changes(now, before)
    assert (c.against, c.now, c.before) == (ALONE, 100.0, 130.0) and c.flagged


def test_a_figure_without_a_spread_or_a_baseline_is_shown_not_judged() -> None:
    one = {"workload": "`wkhost serve`: exec to listening", "unit": "us", "wkhost": 900.0,
           "better": "lower"}
    before = [{**one, "wkhost": 300.0}]
    [c] = changes([one], before)
    assert c.low is None and c.before == 300.0 and not c.flagged
    [new] = changes([row("a workload added since", "higher", fig(1, 0.5, 1.5))], before)
    assert new.before is None and not new.flagged


def test_ratio_range_needs_both_spreads() -> None:
    assert ratio_range(fig(1, 1, 2), fig(2, 1, 4)) == (0.25, 2.0)
    assert ratio_range(fig(1, 1, 2), 3.0) is None
    assert ratio_range({"median": 1.0}, fig(1, 1, 1)) is None


def test_the_report_prints_each_ratio_beside_the_baseline_and_counts_the_falls(
        tmp_path: Path) -> None:
    before = [row(THROUGHPUT, "higher", fig(130, 120, 140), restate=fig(200, 190, 210))]
    saved = tmp_path / "latest.json"
    saved.write_text(json.dumps({"when": "2026-12-01T03:50:24Z",
                                 "figures": {"combined": before}}))
    rows, when = load_baseline(saved)
    assert when == "2026-12-01T03:50:24Z" and rows == before
    lines: list[str] = []
    found = changes([row(THROUGHPUT, "higher", fig(100, 95, 105), restate=fig(200, 190, 210))],
                    rows)
    assert report(found, "latest.json", say=lines.append) == 1
    [line] = [ln for ln in lines if ln.lstrip().startswith(THROUGHPUT)]
    assert "0.50x" in line and "0.65x" in line and "FELL" in line
    assert lines[-1].strip() == "1 of 1 fell by more than this run's spread"


def test_change_is_a_plain_record() -> None:
    c = Change("w", "dbos", 1.0, 0.9, 1.1, None, "higher")
    assert c.worse_by is None and not c.flagged


def test_one_sample_has_no_spread_to_judge_by() -> None:
    once = {"median": 2.0, "min": 2.0, "max": 2.0, "n": 1}
    before = [row(THROUGHPUT, "higher", fig(130, 125, 135))]
    [c] = changes([row(THROUGHPUT, "higher", once)], before)
    assert c.low is None and not c.flagged
