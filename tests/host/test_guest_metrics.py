"""A guest's own metrics (WIT `metrics`, host/guest_metrics.py), from the probe guest's
/count: counters and histograms in the host's registry as `wkguest_<name>`, labelled with
the class, parsed back with prometheus_client's parser. wkguest refuses what is out of
bounds where it is called; the host, which gets the guest's text, drops and counts each
sample out of bounds, logs the first of each reason, and changes nothing else."""

from __future__ import annotations

import logging
import math
from typing import Any

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from wkhost import guest_metrics, metrics

from .support import Probe

Sample = tuple[str, str, float, dict[str, str]]


def count(probe: Probe, *samples: Sample, raw: str | None = None,
          actor_id: str = "m") -> list[str | None]:
    body: dict[str, Any] = {"samples": [list(s) for s in samples]}
    if raw is not None:
        body["raw"] = raw
    return probe.json(actor_id, "POST", "/count", body)["refused"]  # type: ignore[no-any-return]


def samples() -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample in the host's registry, parsed as a scraper would."""
    text = generate_latest(metrics.REGISTRY).decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for fam in text_string_to_metric_families(text) for s in fam.samples}


def guests() -> dict[Any, float]:
    return {k: v for k, v in samples().items() if k[0].startswith("wkguest_")}


def refused(reason: str) -> float:
    return samples().get(("wkhost_guest_samples_refused_total",
                          (("class", "probe"), ("reason", reason))), 0.0)


def test_a_counter_and_a_histogram_carry_the_class_and_the_guests_labels(
        probe: Probe) -> None:
    assert count(probe, ("add", "orders_placed", 1, {"region": "eu"}),
                 ("add", "orders_placed", 2.5, {"region": "eu"}),
                 ("observe", "pay_seconds", 0.2, {"provider": "x"}),
                 ("observe", "pay_seconds", 7, {"provider": "x"}),
                 ("observe", "items", 3, {})) == [None] * 5
    got = samples()
    assert got[("wkguest_orders_placed_total", (("class", "probe"), ("region", "eu")))] == 3.5
    pay = (("class", "probe"), ("provider", "x"))
    assert got[("wkguest_pay_seconds_count", pay)] == 2
    assert got[("wkguest_pay_seconds_sum", pay)] == pytest.approx(7.2)
    assert got[("wkguest_pay_seconds_bucket", (*pay[:1], ("le", "0.25"), pay[1]))] == 1
    assert got[("wkguest_pay_seconds_bucket", (*pay[:1], ("le", "10.0"), pay[1]))] == 2
    # A name without a unit counts: its buckets are a count's.
    assert got[("wkguest_items_bucket", (("class", "probe"), ("le", "3.0")))] == 1


@pytest.mark.parametrize("sample, words", [
    (("add", "Bad-Name", 1, {}), "a metric's name is 1 to 64"),
    (("add", "x" * 65, 1, {}), "a metric's name"),
    (("add", "sent_total", 1, {}), "not ending in _total"),
    (("add", "ok_name", 1, {"class": "x"}), "not class or le"),
    (("add", "ok_name", 1, {f"l{i}": "v" for i in range(5)}), "at most 4 labels"),
    (("add", "ok_name", 1, {"k": "v" * 129}), "at most 128 characters"),
    (("add", "ok_name", 1, {"k": "a\tb"}), "no tab or newline"),
    (("add", "ok_name", -1, {}), "finite number >= 0"),
    (("add", "ok_name", math.inf, {}), "finite number >= 0"),
    (("observe", "ok_seconds", math.nan, {}), "finite number"),
])
def test_wkguest_refuses_out_of_bounds_where_it_is_called(
        probe: Probe, sample: Sample, words: str) -> None:
    had = guests()
    (why,) = count(probe, sample)
    assert why is not None and words in why, why
    assert guests() == had


@pytest.mark.parametrize("line, reason", [
    ("c 1 Bad-Name", "name"),
    ("c 1 sent_total", "name"),
    ("x 1 ok_name", "name"),
    ("c 1 ok_name\tclass=x", "labels"),
    ("c 1 ok_name\tnoequals", "labels"),
    ("c 1 ok_name\ta=1\ta=2", "labels"),
    ("c 1 ok_name\t" + "\t".join(f"l{i}=v" for i in range(5)), "labels"),
    ("c 1 ok_name\tk=" + "v" * 129, "labels"),
    ("c -1 ok_name", "value"),
    ("c nan ok_name", "value"),
    ("c one ok_name", "value"),
    ("h inf ok_seconds", "value"),
])
def test_the_host_drops_and_counts_each_line_out_of_bounds(
        probe: Probe, caplog: pytest.LogCaptureFixture, line: str, reason: str) -> None:
    had, before = guests(), refused(reason)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="wkhost"):
        count(probe, raw=f"c 1 ok_line\n{line}\nc 2 ok_line")
    assert refused(reason) == before + 1
    kept = ("wkguest_ok_line_total", (("class", "probe"),))
    assert guests().get(kept, 0) == had.get(kept, 0) + 3
    assert {k: v for k, v in guests().items() if k != kept} == \
        {k: v for k, v in had.items() if k != kept}
    # The first of each reason is logged (a class's first; later ones are only counted).
    assert all("a sample refused" in r.getMessage() for r in caplog.records)


def test_a_name_keeps_its_kind_and_label_names(probe: Probe) -> None:
    before = (refused("kind"), refused("labels"))
    count(probe, raw="c 1 kept_kind\ta=1\nh 1 kept_kind\ta=1\nc 1 kept_kind\tb=1")
    assert (refused("kind"), refused("labels")) == (before[0] + 1, before[1] + 1)
    assert samples()[("wkguest_kept_kind_total", (("a", "1"), ("class", "probe")))] == 1


def test_a_class_past_its_series_bound_keeps_counting_what_it_had(
        probe: Probe, monkeypatch: pytest.MonkeyPatch) -> None:
    count(probe, raw="c 1 per_item\titem=first")
    monkeypatch.setattr(guest_metrics, "MAX_SERIES", guest_metrics.GUEST.series_of("probe") + 2)
    before = refused("series")
    count(probe, raw="\n".join(f"c 1 per_item\titem=i{i}" for i in range(4))
          + "\nc 1 per_item\titem=first")
    assert refused("series") == before + 2
    s = samples()
    assert s[("wkguest_per_item_total", (("class", "probe"), ("item", "first")))] == 2
    assert s[("wkguest_per_item_total", (("class", "probe"), ("item", "i1")))] == 1
    assert ("wkguest_per_item_total", (("class", "probe"), ("item", "i2"))) not in s


def test_a_call_past_its_size_is_dropped_whole(probe: Probe) -> None:
    had, before = guests(), refused("size")
    probe.json("m", "POST", "/count", {"raw": "c 1 ok_line\nc 1 ok_",
                                       "raw_pad": guest_metrics.MAX_TEXT})
    assert refused("size") == before + 2 and guests() == had


def test_a_call_holds_at_most_max_samples() -> None:
    g = guest_metrics.GuestMetrics()
    over = guest_metrics.MAX_SAMPLES + 3
    assert g.submit("a", "\n".join(["c 1 sent\tto=x"] * over)) == 3
    (fam,) = [f for f in g.families() if f.name == "wkguest_sent"]
    assert [(s.labels, s.value) for s in fam.samples if s.name.endswith("_total")] == \
        [({"class": "a", "to": "x"}, guest_metrics.MAX_SAMPLES)]
