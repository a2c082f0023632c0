"""The short soak, inside `make test`: bench/soak.py with 100 workflows over 30 s (real
clock: sleeps, events, retries, a trap in a step), a kill -9 and restart at the half.
`make soak` runs the long one (1,000 workflows, 5 minutes).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.soak import run_soak

from . import reliability_support

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

# the fixtures, by name (tests/e2e/conftest.py is shared with other suites)
shop_wasm = reliability_support.shop_wasm

RSS_CAP_MB = 2048


def test_a_short_soak_with_a_kill_in_the_middle_loses_nothing(
        shop_wasm: dict[str, Path], tmp_path: Path) -> None:
    r = run_soak(workflows=100, minutes=0.5, restart="kill", data=tmp_path / "data",
                 quiet=True, drain_s=45)
    print(json.dumps({k: v for k, v in r.items() if k != "rss_mb"}, indent=1))
    rss = r["rss_mb"]
    print(f"RSS max {rss['max']} MiB, before the restart {rss['max_before_restart']}, "
          f"after {rss['max_after_restart']}")
    assert not r["errors"], r["errors"]
    assert r["started"] == r["workflows"] == 100
    assert r["completed"] == r["started"], (r["unfinished"], r["wrong_output"])
    assert r["lost_events"] == 0, r["lost"]
    assert r["events_pending_at_end"] == 0
    assert rss["max"] < RSS_CAP_MB, rss["max"]
    assert r["stop_rc"] == 0
    # Latency beyond the waits the workload planned (cool-off, approval): retries with
    # backoff (1 s, 2 s), a trapped pack, the restart. Bounded, not minutes.
    assert r["lag_after_last_wait_ms"]["p99"] < 20_000, r["lag_after_last_wait_ms"]
