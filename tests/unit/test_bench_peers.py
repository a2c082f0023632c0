"""bench.peers.merge: a peer measured before and after wkhost's workloads, as one figure."""

from __future__ import annotations

from bench.peers import merge


def figure(*runs: float) -> dict[str, object]:
    xs = list(runs)
    return {"median": sorted(xs)[len(xs) // 2], "min": min(xs), "max": max(xs), "n": len(xs),
            "runs": xs}


def test_runs_are_pooled_and_the_rest_combined() -> None:
    before = {"step_us": figure(1000.0, 1100.0),
              "throughput": {"8": {"wf_per_s": figure(100.0, 110.0, 120.0), "p50_ms": 60.0,
                                   "failures": 1}},
              "version": "dbos 3.4.0"}
    after = {"step_us": figure(1300.0, 1400.0),
             "throughput": {"8": {"wf_per_s": figure(130.0, 140.0, 150.0), "p50_ms": 50.0,
                                  "failures": 0}},
             "version": "dbos 3.4.0 (again)"}
    both = merge(before, after)
    tp = both["throughput"]["8"]
    assert tp["wf_per_s"]["runs"] == [100.0, 110.0, 120.0, 130.0, 140.0, 150.0]
    assert (tp["wf_per_s"]["median"], tp["wf_per_s"]["min"], tp["wf_per_s"]["max"],
            tp["wf_per_s"]["n"]) == (125.0, 100.0, 150.0, 6)
    assert tp["p50_ms"] == 55.0 and tp["failures"] == 1
    assert both["step_us"]["median"] == 1200.0
    assert both["version"] == "dbos 3.4.0"


def test_a_skipped_half_gives_way_to_the_other() -> None:
    ran = {"step_us": figure(1000.0)}
    assert merge({"skipped": "failed: boom"}, ran) == ran
    assert merge(ran, {"skipped": "failed: boom"}) == ran
    assert merge({"skipped": "a"}, {"skipped": "b"}) == {"skipped": "b"}
