"""Finding the instance pool's regions among the mappings an engine made (units)."""

from __future__ import annotations

import logging

import pytest
from wkhost.engine import InstancePool, _pool_regions

GiB = 1 << 30
POOL = InstancePool(instances=10, max_memory_bytes=256 << 20)
TABLES = 10 * 32 * 100_000 * 8  # slots x tables per component x elements x 8 bytes
MEMORIES = (0x7F00_0000_0000, 0x7F00_0000_0000 + 10 * 4 * GiB)
TABLE_POOL = (0x7E00_0000_0000, 0x7E00_0000_0000 + TABLES + (64 << 10))
THREAD_STACK = (0x7D00_0000_0000, 0x7D00_0000_0000 + (64 << 20))


def test_the_memory_and_table_pools_are_told_from_other_new_mappings() -> None:
    made = {MEMORIES, TABLE_POOL, THREAD_STACK, (0x1000, 0x2000)}
    assert _pool_regions(made, POOL) == [MEMORIES, TABLE_POOL]


@pytest.mark.parametrize("made", [
    {TABLE_POOL, THREAD_STACK},  # no memory pool (not Linux, or not pooled)
    {MEMORIES, THREAD_STACK},  # no table pool
    {MEMORIES, (MEMORIES[1], MEMORIES[1] + 40 * GiB), TABLE_POOL},  # two could be it
])
def test_anything_unsure_releases_nothing_and_says_so(
        made: set[tuple[int, int]], caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="wkhost.engine"):
        assert _pool_regions(made, POOL) == []
    assert "idle slots will keep their pages resident" in caplog.text
