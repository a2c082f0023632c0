"""Alarms fire when the (fake) clock reaches them, oldest first, each once at a time."""

from __future__ import annotations

import threading
import time

from wkhost.clock import FakeClock
from wkhost.scheduler import Scheduler
from wkhost.types import ActorRef


def wait_for(cond, timeout: float = 2.0) -> bool:  # type: ignore[no-untyped-def]
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.005)
    return False


def test_far_alarm_fires_when_the_clock_jumps_days_ahead() -> None:
    clock = FakeClock(0)
    fired: list[ActorRef] = []
    s = Scheduler(clock, fired.append, max_inflight=4)
    s.start()
    try:
        ref = ActorRef("c", "a")
        s.set(ref, 3 * 86_400_000)
        time.sleep(0.05)
        assert fired == []
        clock.jump(3 * 86_400_000)
        assert wait_for(lambda: fired == [ref])
    finally:
        s.stop()


def test_due_alarms_go_oldest_first_and_a_rearmer_cannot_starve_others() -> None:
    clock = FakeClock(1_000)
    fired: list[str] = []
    lock = threading.Lock()
    s: Scheduler

    def fire(ref: ActorRef) -> None:
        with lock:
            fired.append(ref.id)
        if ref.id == "greedy" and len(fired) < 50:
            s.set(ref, clock.now_ms())  # re-arm to now, every time
        s.done(ref)

    s = Scheduler(clock, fire, max_inflight=1)
    s.set(ActorRef("c", "greedy"), 10)
    for i in range(5):
        s.set(ActorRef("c", f"n{i}"), 20 + i)
    s.start()
    try:
        assert wait_for(lambda: all(f"n{i}" in fired for i in range(5)))
        assert fired.index("n4") < 10
    finally:
        s.stop()


def test_unset_and_superseded_alarms_do_not_fire() -> None:
    clock = FakeClock(0)
    fired: list[ActorRef] = []
    s = Scheduler(clock, lambda r: (fired.append(r), s.done(r)), max_inflight=4)
    a, b = ActorRef("c", "a"), ActorRef("c", "b")
    s.set(a, 100)
    s.set(a, None)
    s.set(b, 100)
    s.set(b, 10_000)
    s.start()
    try:
        clock.jump(200)
        time.sleep(0.05)
        assert fired == []
        clock.jump(10_000)
        assert wait_for(lambda: fired == [b])
    finally:
        s.stop()


def test_an_alarm_set_due_is_handed_out_by_the_setter_oldest_first() -> None:
    """Once started, set() hands out what is due from the calling thread (no wake-up of
    the scheduler's thread), still oldest first and within max_inflight."""
    clock = FakeClock(1_000)
    fired: list[tuple[str, str]] = []
    s = Scheduler(clock, lambda r: fired.append((r.id, threading.current_thread().name)),
                  max_inflight=2)
    s.start()
    try:
        s.set(ActorRef("c", "later"), 5_000)
        assert fired == []
        clock.jump(4_000)  # "later" is due now, and handed out by the scheduler's thread
        assert wait_for(lambda: [f[0] for f in fired] == ["later"])
        assert fired[0][1] == "wk-alarms"
        s.set(ActorRef("c", "now"), 0)  # in the past: due now
        assert fired[1] == ("now", threading.current_thread().name)
        s.set(ActorRef("c", "full"), 0)  # two in flight: it waits for a done()
        assert len(fired) == 2
        s.done(ActorRef("c", "later"))
        assert wait_for(lambda: len(fired) == 3) and fired[2][0] == "full"
    finally:
        s.stop()
