"""wkhost.testing.Switches: a host's test-only switches, in one object."""

from __future__ import annotations

import pytest
from wkhost.clock import SystemClock
from wkhost.testing import FakeClock, NoFakeClock, Switches


def test_a_real_clock_has_no_fake_one_to_move() -> None:
    switches = Switches(SystemClock())
    assert switches.fake_clock is None and switches.always_fresh_instance is False
    with pytest.raises(NoFakeClock, match="started with --fake-clock"):
        switches.advance_clock(1000)
    with pytest.raises(NoFakeClock, match="no test clock here"):
        switches.set_clock(1000)


def test_the_fake_clock_moves_forward_only_and_never_back() -> None:
    clock = FakeClock(start_ms=5_000)
    switches = Switches(clock, always_fresh_instance=True)
    assert switches.fake_clock is clock and switches.always_fresh_instance is True
    assert switches.advance_clock(250) == 5_250 == clock.now_ms()
    assert switches.set_clock(1_000) == 5_250  # another process's time, behind ours
    assert switches.set_clock(9_000) == 9_000
    with pytest.raises(ValueError, match="only moves forward"):
        switches.advance_clock(-1)


def test_no_crash_point_is_armed_in_a_process_started_without_one() -> None:
    assert Switches.crash_armed is False
    Switches.crash("call:anything")  # returns: nothing armed
