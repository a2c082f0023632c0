"""The run gate: how many events run at once, and in which order they get a slot."""

from __future__ import annotations

import threading
import time

from wkhost.runtime.run_gate import RunGate

from .thread_support import WAIT_S, until


def _queued(gate: RunGate) -> int:
    return len(gate._resuming) + len(gate._new)


def test_no_more_events_run_at_once_than_slots() -> None:
    gate = RunGate(2)
    inside, most = 0, 0
    count_lock = threading.Lock()

    def holding(step: int) -> None:
        nonlocal inside, most
        with count_lock:
            inside += step
            most = max(most, inside)

    def event() -> None:
        with gate.running():
            holding(1)
            time.sleep(0.002)
            holding(-1)
            with gate.waiting():  # a wait lets another in, and back out again
                time.sleep(0.001)
            holding(1)
            time.sleep(0.001)
            holding(-1)

    threads = [threading.Thread(target=event) for _ in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(WAIT_S)
    assert most == 2
    assert inside == 0 and gate._free == 2 and _queued(gate) == 0


def test_a_thread_back_from_a_wait_goes_before_events_not_started() -> None:
    gate = RunGate(1)
    order: list[str] = []
    waited, resumed_blocked = threading.Event(), threading.Event()
    b_may_finish = threading.Event()

    def a() -> None:
        with gate.running():
            with gate.waiting():
                waited.set()
                resumed_blocked.wait(WAIT_S)  # its fsync ends while B holds the slot
            order.append("a resumed")

    def b() -> None:
        with gate.running():
            order.append("b")
            b_may_finish.wait(WAIT_S)

    def c() -> None:
        with gate.running():
            order.append("c")

    ta = threading.Thread(target=a)
    ta.start()
    waited.wait(WAIT_S)
    tb = threading.Thread(target=b)
    tb.start()
    until(lambda: order == ["b"])
    tc = threading.Thread(target=c)
    tc.start()  # C queues first, as a new event
    until(lambda: len(gate._new) == 1)
    resumed_blocked.set()  # then A, back from its wait
    until(lambda: len(gate._resuming) == 1)
    b_may_finish.set()
    for t in (ta, tb, tc):
        t.join(WAIT_S)
    assert order == ["b", "a resumed", "c"]


def test_a_freed_slot_goes_to_the_first_waiter_not_to_a_newcomer() -> None:
    gate = RunGate(1)
    order: list[str] = []
    release = threading.Event()

    def holder() -> None:
        with gate.running():
            release.wait(WAIT_S)

    def queued(name: str) -> None:
        with gate.running():
            order.append(name)

    th = threading.Thread(target=holder)
    th.start()
    until(lambda: gate._free == 0)
    first = threading.Thread(target=queued, args=("first",))
    first.start()
    until(lambda: len(gate._new) == 1)
    release.set()
    th.join(WAIT_S)
    # The slot went to the first waiter as the holder let it go: a newcomer finds it
    # taken, whether or not that waiter has woken up yet.
    queued("newcomer")
    first.join(WAIT_S)
    assert order == ["first", "newcomer"]


def test_nested_events_share_their_caller_slot_and_waiting_outside_is_a_no_op() -> None:
    gate = RunGate(1)
    with gate.waiting():  # not running: nothing to give up
        assert gate._free == 1
    # A nested call (the second `running`) takes no second slot, so cannot deadlock.
    with gate.running(), gate.running():
        assert gate._free == 0
        with gate.waiting():
            assert gate._free == 1
            with gate.waiting():  # already given up
                assert gate._free == 1
        assert gate._free == 0
    assert gate._free == 1


def test_while_both_wait_every_other_slot_goes_to_a_new_event() -> None:
    """Events that keep waiting and coming back cannot hold a new one off for good."""
    gate = RunGate(1)
    order: list[str] = []
    done_waiting = {name: threading.Event() for name in ("r1", "r2")}
    in_wait = {name: threading.Event() for name in ("r1", "r2")}
    release_holder = threading.Event()

    def resumer(name: str) -> None:
        with gate.running():
            with gate.waiting():
                in_wait[name].set()
                done_waiting[name].wait(WAIT_S)
            order.append(name)

    def holder() -> None:
        with gate.running():
            release_holder.wait(WAIT_S)

    def new_event() -> None:
        with gate.running():
            order.append("new")

    threads = []
    for name in ("r1", "r2"):
        threads.append(threading.Thread(target=resumer, args=(name,)))
        threads[-1].start()
        in_wait[name].wait(WAIT_S)
    threads.append(threading.Thread(target=holder))
    threads[-1].start()
    until(lambda: gate._free == 0)
    threads.append(threading.Thread(target=new_event))
    threads[-1].start()
    until(lambda: len(gate._new) == 1)
    for queued, name in enumerate(("r1", "r2"), 1):
        done_waiting[name].set()
        until(lambda queued=queued: len(gate._resuming) == queued)
    release_holder.set()
    for t in threads:
        t.join(WAIT_S)
    assert order == ["r1", "new", "r2"]
