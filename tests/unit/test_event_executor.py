"""EventExecutor: how many event threads work at once, and long waits that let others in."""

from __future__ import annotations

import threading
import time
from concurrent.futures import CancelledError, Future, wait

import pytest
from wkhost.runtime.executor import EventExecutor

from .thread_support import WAIT_S, until


class Counter:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.now = 0
        self.most = 0

    def step(self, d: int) -> None:
        with self.lock:
            self.now += d
            self.most = max(self.most, self.now)


def test_no_more_than_active_threads_work_at_once_and_all_work_is_done() -> None:
    ex = EventExecutor(active=2, max_threads=16)
    working = Counter()

    def event(i: int) -> int:
        working.step(1)
        time.sleep(0.002)
        working.step(-1)
        return i * i

    futures = [ex.submit(event, i) for i in range(40)]
    assert [f.result(WAIT_S) for f in futures] == [i * i for i in range(40)]
    assert working.most == 2
    # A thread that ends an event takes the next itself: no thread per event.
    assert ex._threads <= 3
    ex.shutdown()


def test_an_event_in_a_long_wait_lets_another_start() -> None:
    ex = EventExecutor(active=1, max_threads=4)
    in_wait, release = threading.Event(), threading.Event()
    order: list[str] = []

    def waits() -> None:
        with ex.blocking():
            in_wait.set()
            release.wait(WAIT_S)
        order.append("waiter done")

    def other() -> None:
        order.append("other ran")

    first = ex.submit(waits)
    assert in_wait.wait(WAIT_S)
    second = ex.submit(other)
    second.result(WAIT_S)  # ran while the first waited: one working thread is allowed
    release.set()
    first.result(WAIT_S)
    assert order == ["other ran", "waiter done"]
    ex.shutdown()


def test_without_a_long_wait_the_next_event_waits_for_the_working_one() -> None:
    ex = EventExecutor(active=1, max_threads=4)
    started, release = threading.Event(), threading.Event()

    def busy() -> None:
        started.set()
        release.wait(WAIT_S)  # an fsync, say: not a long wait

    first = ex.submit(busy)
    assert started.wait(WAIT_S)
    second = ex.submit(lambda: "second")
    time.sleep(0.05)
    assert not second.done()
    release.set()
    assert second.result(WAIT_S) == "second"
    first.result(WAIT_S)
    ex.shutdown()


def test_back_from_a_long_wait_new_events_wait_until_below_the_limit() -> None:
    ex = EventExecutor(active=1, max_threads=4)
    in_wait, back, finish = threading.Event(), threading.Event(), threading.Event()
    other_started, other_may_end = threading.Event(), threading.Event()

    def waiter() -> None:
        with ex.blocking():
            in_wait.set()
            back.wait(WAIT_S)
        finish.wait(WAIT_S)  # working again, alongside the other: 2 > 1

    def other() -> None:
        other_started.set()
        other_may_end.wait(WAIT_S)

    w = ex.submit(waiter)
    assert in_wait.wait(WAIT_S)
    o = ex.submit(other)
    assert other_started.wait(WAIT_S)
    back.set()
    until(lambda: ex._active == 2)
    third = ex.submit(lambda: "third")
    other_may_end.set()
    o.result(WAIT_S)
    time.sleep(0.05)
    assert not third.done()  # still one working (the waiter), which is the limit
    finish.set()
    assert third.result(WAIT_S) == "third"
    w.result(WAIT_S)
    ex.shutdown()


def test_nested_and_foreign_long_waits_are_no_ops() -> None:
    ex = EventExecutor(active=1, max_threads=2)
    with ex.blocking():  # not one of its threads (a test calling the host directly)
        assert ex._active == 0

    def nested() -> int:
        with ex.blocking():
            inside = ex._active
            with ex.blocking():
                assert ex._active == inside
        return ex._active

    assert ex.submit(nested).result(WAIT_S) == 1
    ex.shutdown()


def test_threads_are_capped_even_when_all_wait_long() -> None:
    ex = EventExecutor(active=1, max_threads=3)
    release = threading.Event()
    waiting = Counter()

    def waits() -> None:
        with ex.blocking():
            waiting.step(1)
            release.wait(WAIT_S)
            waiting.step(-1)

    futures = [ex.submit(waits) for _ in range(5)]
    until(lambda: waiting.now == 3)
    time.sleep(0.05)
    assert waiting.now == 3 and ex._threads == 3  # two wait in the queue
    release.set()
    done, _ = wait(futures, WAIT_S)
    assert len(done) == 5 and waiting.most == 3
    ex.shutdown()


def test_an_exception_reaches_the_future_and_the_thread_goes_on() -> None:
    ex = EventExecutor(active=1, max_threads=1)

    def fails() -> None:
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        ex.submit(fails).result(WAIT_S)
    assert ex.submit(lambda: 7).result(WAIT_S) == 7
    ex.shutdown()


def test_shutdown_cancels_what_has_not_started_and_refuses_more() -> None:
    ex = EventExecutor(active=1, max_threads=1)
    started, release = threading.Event(), threading.Event()

    def busy() -> str:
        started.set()
        release.wait(WAIT_S)
        return "ran"

    running = ex.submit(busy)
    assert started.wait(WAIT_S)
    queued: Future[str] = ex.submit(lambda: "never")
    ex.shutdown(cancel_futures=True)
    with pytest.raises(CancelledError):
        queued.result(WAIT_S)
    with pytest.raises(RuntimeError, match="shut down"):
        ex.submit(lambda: None)
    release.set()
    assert running.result(WAIT_S) == "ran"
    until(lambda: ex._threads == 0)


def test_limits_are_checked() -> None:
    with pytest.raises(ValueError):
        EventExecutor(active=0, max_threads=4)
    with pytest.raises(ValueError):
        EventExecutor(active=5, max_threads=4)


def test_a_thread_that_cannot_start_leaves_the_event_queued_not_lost(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    ex = EventExecutor(active=1, max_threads=2, name="wk-no-thread")
    real_start = threading.Thread.start

    def no_thread(self: threading.Thread) -> None:
        # Thread.start is the whole process's: only this executor's threads cannot start
        # (not the process-wide ones a host module may start meanwhile).
        if not self.name.startswith("wk-no-thread"):
            return real_start(self)
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", no_thread)
    first = ex.submit(lambda: "first")  # no error for the caller: the event is queued
    assert not first.done() and ex._threads == 0
    monkeypatch.setattr(threading.Thread, "start", real_start)
    second = ex.submit(lambda: "second")
    assert (first.result(WAIT_S), second.result(WAIT_S)) == ("first", "second")
    ex.shutdown()
