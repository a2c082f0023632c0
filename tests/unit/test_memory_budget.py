"""MemoryBudget's rounds on a scripted RSS: what it lets go of, in which order, down to
which mark, and when it says the budget is exceeded. The host's real steps and real RSS:
tests/host/test_memory_budget.py."""

from __future__ import annotations

import logging

import pytest
from wkhost.runtime import memory_budget
from wkhost.runtime.memory_budget import CHECK_EVERY_INSTANCES, MemoryBudget, Steps

MiB = 1 << 20
BUDGET = 100 * MiB


class Process:
    """An RSS that each step brings down by what it frees, and a record of the steps."""

    def __init__(self, rss: int, frees: dict[str, int], actors: int, per_actor: int) -> None:
        self.rss = rss
        self.frees = frees
        self.actors = actors
        self.per_actor = per_actor
        self.done: list[str] = []
        self.reads = 0

    def read(self) -> int:
        self.reads += 1
        return self.rss

    def step(self, name: str) -> object:
        def run() -> None:
            self.done.append(name)
            self.rss -= self.frees.get(name, 0)
            self.frees[name] = 0
        return run

    def evict(self, n: int) -> int:
        dropped = min(n, self.actors)
        self.actors -= dropped
        self.rss -= dropped * self.per_actor
        self.done.append(f"evict {dropped}")
        return dropped

    def budget(self) -> MemoryBudget:
        steps = Steps(cheap=[self.step(n) for n in ("spares", "pool", "trim")],
                      evict=self.evict)
        return MemoryBudget(BUDGET, steps, self.read)


def test_under_the_high_mark_nothing_is_let_go() -> None:
    proc = Process(89 * MiB, {"spares": 10 * MiB}, actors=10, per_actor=MiB)
    b = proc.budget()
    b.check()
    assert proc.done == [] and b.rss == 89 * MiB and not b.over


def test_the_cheap_steps_go_first_and_stop_at_the_low_mark() -> None:
    proc = Process(95 * MiB, {"spares": 5 * MiB, "pool": 20 * MiB}, actors=10, per_actor=MiB)
    b = proc.budget()
    b.check()
    assert proc.done == ["spares", "pool"]  # 70 MiB: under the low mark, 80
    assert proc.actors == 10 and b.evicted == 0


def test_idle_actors_go_last_a_few_at_a_time_down_to_the_low_mark() -> None:
    proc = Process(95 * MiB, {"spares": MiB}, actors=20, per_actor=2 * MiB)
    b = proc.budget()
    b.check()
    # 95 - 1 = 94; each batch of 4 frees 8: 86, then 78 <= 80
    assert proc.done == ["spares", "pool", "trim", "evict 4", "spares", "pool", "trim",
                         "evict 4", "spares", "pool", "trim"]
    assert b.evicted == 8 and proc.actors == 12 and not b.over


def test_busy_actors_over_the_budget_are_served_with_one_warning(
        caplog: pytest.LogCaptureFixture) -> None:
    proc = Process(120 * MiB, {}, actors=2, per_actor=MiB)  # the rest is busy
    b = proc.budget()
    with caplog.at_level(logging.WARNING, logger="wkhost"):
        b.check()
        assert b.over and proc.actors == 0
        proc.rss += 3 * MiB
        b.check()
    warnings = [r.getMessage() for r in caplog.records]
    assert warnings == ["the actors busy with events hold more memory than the budget: "
                        "RSS 118 MiB, --memory-budget 100 MiB; serving them all the same"]
    proc.rss = 70 * MiB  # the events ended
    b.check()
    assert not b.over


def _still_clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The budget's monotonic clock, at 1000 s until the test moves `now[0]`."""
    now = [1000.0]
    monkeypatch.setattr(memory_budget.time, "monotonic", lambda: now[0])
    return now


def test_a_futile_round_is_not_repeated_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    now = _still_clock(monkeypatch)
    proc = Process(120 * MiB, {}, actors=0, per_actor=MiB)
    b = proc.budget()
    b.check()
    rounds = len(proc.done)
    b.check()  # no lower, and no higher: nothing to try
    assert len(proc.done) == rounds
    proc.rss += 7 * MiB  # grown past the floor by a sixteenth of the budget
    b.check()
    assert len(proc.done) == 2 * rounds
    now[0] += memory_budget.FUTILE_WAIT_S  # or a while later: a busy actor may be idle
    b.check()
    assert len(proc.done) == 3 * rounds


def test_a_new_instance_reads_the_rss_only_every_few(monkeypatch: pytest.MonkeyPatch) -> None:
    now = _still_clock(monkeypatch)
    proc = Process(10 * MiB, {}, actors=0, per_actor=MiB)
    b = proc.budget()
    b.check()
    assert proc.reads == 1
    for _ in range(CHECK_EVERY_INSTANCES - 1):
        b.new_instance()
    assert proc.reads == 1
    b.new_instance()
    assert proc.reads == 2
    now[0] += 2 * memory_budget.CHECK_EVERY_S
    b.new_instance()  # or once it has been a while
    assert proc.reads == 3


def test_a_step_that_fails_is_logged_and_never_the_callers_error(
        caplog: pytest.LogCaptureFixture) -> None:
    def fail(_n: int) -> int:
        raise OSError("the disk went away")

    b = MemoryBudget(BUDGET, Steps(cheap=[], evict=fail), lambda: 95 * MiB)
    with caplog.at_level(logging.ERROR, logger="wkhost"):
        b.check()
    assert "letting go of memory for the budget failed" in caplog.text


def test_the_budget_caps_the_live_instances_but_never_raises_a_lower_cap() -> None:
    from wkhost.config import HostConfig, MiB
    from wkhost.events.eviction import MIN_LIVE_INSTANCES, live_cap

    assert live_cap(HostConfig()) == 96  # no budget: --max-live-instances
    assert live_cap(HostConfig(memory_budget_bytes=512 * MiB)) == 10
    assert live_cap(HostConfig(memory_budget_bytes=1024 * MiB)) == 27
    assert live_cap(HostConfig(memory_budget_bytes=64 * MiB)) == MIN_LIVE_INSTANCES
    assert live_cap(HostConfig(memory_budget_bytes=512 * MiB, max_live_instances=1)) == 1
    assert live_cap(HostConfig(memory_budget_bytes=512 * MiB, instance_pool=False)) == 31
