"""`make chaos`'s check of each fault kind's bound (tests/cluster/chaos.py), on made-up
waits: a wait is counted under the fault in force when it began, or under a kill -9 or
pause that came while it lasted, from that fault's start; the run fails when the longest
of a kind passes that kind's bound."""

from __future__ import annotations

from tests.cluster.chaos import (
    HAND_BACK,
    KILL,
    PAUSE,
    _parser,
    bounds_s,
    exit_status,
    longest_by_kind,
    over_bounds,
)
from tests.cluster.load import Wait

BOUNDS = bounds_s(ttl_s=1.5, renew_s=0.3, slack_s=0.5)
PHASES = [(10.0, KILL), (13.0, HAND_BACK), (20.0, PAUSE), (23.0, HAND_BACK)]


def test_the_bounds_are_the_documented_ones_with_the_view_refresh() -> None:
    assert BOUNDS == {KILL: 1.5 + 0.6 + 0.5, PAUSE: 1.5 + 0.6 + 0.5, HAND_BACK: 0.6 + 0.5}


def test_each_wait_counts_under_the_fault_in_force_while_it_lasted() -> None:
    waits = [Wait("a", 9.0, 9.2), Wait("b", 10.1, 12.0), Wait("c", 12.9, 13.5),
             Wait("d", 13.1, 13.9), Wait("e", 21.0, 23.4), Wait("f", 24.0, 24.3)]
    longest = longest_by_kind(waits, PHASES, BOUNDS)
    assert {k: w.actor for k, w in longest.items()} == {
        HAND_BACK: "d", KILL: "b", PAUSE: "e"}
    assert over_bounds(longest, BOUNDS) == {}


def test_a_wait_caught_by_the_next_fault_counts_under_it_from_its_start() -> None:
    # Begun in the hand-back after the kill, caught by the pause at 20 s.
    longest = longest_by_kind([Wait("a", 19.5, 21.8)], PHASES, BOUNDS)
    assert longest == {PAUSE: Wait("a", 20.0, 21.8)}
    assert over_bounds(longest, BOUNDS) == {}
    # Begun in the kill at 10 s, over its bound, and not excused by the hand-back.
    longest = longest_by_kind([Wait("b", 10.2, 13.5)], PHASES, BOUNDS)
    assert longest == {KILL: Wait("b", 10.2, 13.5)}
    assert list(over_bounds(longest, BOUNDS)) == [KILL]
    # Begun before any fault: the steady state, bound as a hand-back.
    longest = longest_by_kind([Wait("b", 1.0, 2.5)], PHASES, BOUNDS)
    assert list(longest) == [HAND_BACK] and list(over_bounds(longest, BOUNDS)) == [HAND_BACK]


def test_a_wait_past_its_kinds_bound_fails_the_check() -> None:
    # 2.5 s is within a kill's bound (2.6 s) but not within a hand-back's (1.1 s).
    waits = [Wait("a", 10.5, 13.0), Wait("b", 13.5, 16.0), Wait("c", 20.5, 23.2)]
    over = over_bounds(longest_by_kind(waits, PHASES, BOUNDS), BOUNDS)
    assert {k: w.actor for k, w in over.items()} == {HAND_BACK: "b", PAUSE: "c"}


def test_the_run_exits_non_zero_when_a_wait_passes_its_bound() -> None:
    over = over_bounds(longest_by_kind([Wait("a", 20.5, 23.2)], PHASES, BOUNDS), BOUNDS)
    assert exit_status({}, [], [], over) == 1
    assert exit_status({}, [], [], {}) == 0
    assert _parser().parse_args(["--slack", "0.25"]).slack == 0.25
