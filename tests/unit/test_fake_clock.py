"""The fake clock kept in a file (host/testing/clock.py): it starts at the later of the
kept time and the real one, every move is written before it is seen, and clocks sharing
the file (the processes of --processes N) never write it back."""

from __future__ import annotations

import time
from pathlib import Path

from wkhost.testing import FakeClock

DAY = 86_400_000


def real_ms() -> int:
    return time.time_ns() // 1_000_000


def test_a_moved_clock_starts_where_it_was(tmp_path: Path) -> None:
    moved = FakeClock.served_on(tmp_path).jump(DAY)
    assert FakeClock.served_on(tmp_path).now_ms() == moved
    assert FakeClock.served_on(tmp_path).set(moved + 5) == moved + 5
    assert FakeClock.served_on(tmp_path).now_ms() == moved + 5


def test_a_kept_time_behind_the_real_one_starts_at_the_real_one(tmp_path: Path) -> None:
    FakeClock.served_on(tmp_path, start_ms=1_000)
    before = real_ms()
    assert FakeClock.served_on(tmp_path).now_ms() >= before
    # ...and a start given (the supervisor's) is not taken back either.
    assert FakeClock.served_on(tmp_path, start_ms=before + DAY).now_ms() == before + DAY
    assert FakeClock.served_on(tmp_path, start_ms=1_000).now_ms() == before + DAY


def test_clocks_sharing_the_file_keep_the_latest(tmp_path: Path) -> None:
    a, b = FakeClock.served_on(tmp_path), FakeClock.served_on(tmp_path)
    ahead = a.jump(2 * DAY)
    b.jump(DAY)  # behind a's: the file keeps a's time, and b moves up to it
    assert b.now_ms() == ahead
    assert FakeClock.served_on(tmp_path).now_ms() == ahead


def test_a_file_not_written_whole_is_as_none(tmp_path: Path) -> None:
    path = tmp_path / "_host" / "fake-clock"
    path.parent.mkdir()
    path.write_bytes(b"00000000001\x00")
    before = real_ms()
    assert FakeClock.served_on(tmp_path).now_ms() >= before
    assert path.read_text().strip().isdigit()


def test_a_clock_kept_nowhere_starts_where_told() -> None:
    clock = FakeClock(1_000)
    assert clock.jump(5) == 1_005 and clock.set(2_000) == 2_000 and clock.set(7) == 2_000
