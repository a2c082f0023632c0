"""Finding the instance pool's memory among the mappings an engine made (units).

Releasing anything else would free memory in use (the host's, or another engine's), so
anything unsure must find nothing."""

from __future__ import annotations

import logging

import pytest
from wkhost.engine.pool import InstancePool, _pool_regions

GUARD = 32 << 20
SLOT = (4 << 30) + GUARD
POOL = InstancePool(instances=10, max_memory_bytes=256 << 20)
BASE = 0x7F00_0000_0000
RESERVATION = (BASE, BASE + GUARD + 10 * SLOT)
TABLE_POOL = (0x7E00_0000_0000, 0x7E00_0000_0000 + 10 * 32 * 802_816)
THREAD_STACK = (0x7D00_0000_0000, 0x7D00_0000_0000 + (64 << 20))
BEFORE = {(0x1000, 0x2000), THREAD_STACK}


def test_the_reservation_is_told_from_other_new_mappings_by_its_exact_size() -> None:
    made = {RESERVATION, TABLE_POOL, (0x7C00_0000_0000, 0x7C00_0000_0000 + (4 << 30))}
    assert _pool_regions(made, BEFORE, POOL) == [RESERVATION]


@pytest.mark.parametrize("neighbour", [
    (BASE - 4096, BASE),  # a guard page below, merged into one VMA
    (RESERVATION[1], RESERVATION[1] + (2 << 20)),  # a stack above
])
def test_a_neighbour_merged_into_the_reservation_is_cut_off(neighbour: tuple[int, int]) -> None:
    merged = (min(neighbour[0], BASE), max(neighbour[1], RESERVATION[1]))
    assert _pool_regions({merged}, BEFORE | {neighbour}, POOL) == [RESERVATION]


@pytest.mark.parametrize("made", [
    {TABLE_POOL, THREAD_STACK},  # no reservation (not Linux, or not pooled)
    {(BASE, RESERVATION[1] + 4096)},  # bigger, and nothing known to cut off
    {RESERVATION, (RESERVATION[1] + GUARD, RESERVATION[1] + GUARD + RESERVATION[1] - BASE)},
])
def test_anything_unsure_releases_nothing_and_says_so(
        made: set[tuple[int, int]], caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="wkhost.engine"):
        assert _pool_regions(made, BEFORE, POOL) == []
    assert "idle slots will keep their pages resident" in caplog.text
