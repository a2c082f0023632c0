"""Alarms fire when the (fake) clock reaches them, oldest first, each once at a time."""

from __future__ import annotations

import threading
import time

from wkhost.runtime.scheduler import Scheduler
from wkhost.testing import FakeClock
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


def test_only_an_earlier_wake_up_wakes_the_scheduler_thread() -> None:
    """A later alarm (a workflow's retention, an hour away) changes nothing the thread
    waits for, so it is not woken; all of them still fire, in time order."""
    clock = FakeClock(0)
    fired: list[str] = []
    s = Scheduler(clock, lambda r: (fired.append(r.id), s.done(r)), max_inflight=4)
    wakes = [0]
    notify_all = s._cond.notify_all

    def counted() -> None:
        wakes[0] += 1
        notify_all()

    s._cond.notify_all = counted  # type: ignore[method-assign]
    s.start()
    try:
        s.set(ActorRef("c", "b"), 5_000)
        assert wakes[0] == 1  # the first: the thread now wakes at 5,000
        s.set(ActorRef("c", "c"), 9_000)
        s.set(ActorRef("c", "b"), 5_000)  # unchanged
        assert wakes[0] == 1
        s.set(ActorRef("c", "a"), 1_000)
        assert wakes[0] == 2
        clock.jump(10_000)
        assert wait_for(lambda: fired == ["a", "b", "c"])
    finally:
        s.stop()


def test_wait_settled_returns_once_what_came_due_and_what_it_set_for_now_have_run() -> None:
    """A test clock's advance with settle_ms: the alarm due after the jump has run, and
    so has the one its event set for the same moment; one set for later does not count."""
    clock = FakeClock(0)
    fired: list[str] = []
    release = threading.Event()

    def fire(ref: ActorRef) -> None:
        def run() -> None:
            release.wait(5)
            fired.append(ref.id)
            if ref.id == "a":  # its event sets another alarm for now, and one for later
                s.set(ActorRef("c", "b"), clock.now_ms())
                s.set(ActorRef("c", "later"), clock.now_ms() + 60_000)
            s.done(ref)
        threading.Thread(target=run, daemon=True).start()

    s = Scheduler(clock, fire, max_inflight=4)
    s.start()
    try:
        s.set(ActorRef("c", "a"), 1_000)
        assert s.wait_settled(0.05)  # nothing due yet
        clock.jump(1_000)
        assert not s.wait_settled(0.1)  # a's event is still running
        release.set()
        assert s.wait_settled(5)
        assert fired == ["a", "b"]
    finally:
        s.stop()
