"""Re-entry and cross-thread cycles are refused at once; a plain wait just waits."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from wkhost.errors import CallRefused, DeadlineExceeded
from wkhost.events.actor_slot import ActorSlot
from wkhost.events.call_graph import CallGraph
from wkhost.events.event import Chain
from wkhost.types import ActorRef


def slot(name: str) -> ActorSlot:
    return ActorSlot(ActorRef("c", name), Path("/nonexistent"))


def test_reentry_is_refused_and_names_the_path() -> None:
    g, a, b, chain = CallGraph(), slot("a"), slot("b"), Chain()
    g.acquire(chain, a, 1)
    g.acquire(chain, b, 1)
    with pytest.raises(CallRefused, match="c/a -> c/b -> c/a"):
        g.acquire(chain, a, 1)
    g.release(chain, b)
    g.release(chain, a)
    assert not a.lock.locked() and not b.lock.locked()


def test_a_cycle_across_threads_is_refused_at_once() -> None:
    g, a, b = CallGraph(), slot("a"), slot("b")
    first, second = Chain(), Chain()
    g.acquire(first, a, 1)
    g.acquire(second, b, 1)
    waiting = threading.Event()
    outcome: list[object] = []

    def first_calls_b() -> None:
        waiting.set()
        try:
            g.acquire(first, b, 5)
            outcome.append("got b")
            g.release(first, b)
        except Exception as e:  # noqa: BLE001
            outcome.append(e)

    t = threading.Thread(target=first_calls_b)
    t.start()
    waiting.wait()
    while first.waiting_for is None:
        time.sleep(0.001)
    started = time.monotonic()
    with pytest.raises(CallRefused, match="cycle"):
        g.acquire(second, a, 5)
    assert time.monotonic() - started < 2.5  # refused at once, not at the 5 s wait's end
    g.release(second, b)      # the refused side gives up; the other goes on
    t.join(2)
    assert outcome == ["got b"]
    g.release(first, a)


def test_a_busy_actor_is_waited_for_within_the_deadline() -> None:
    g, a = CallGraph(), slot("a")
    holder = Chain()
    g.acquire(holder, a, 1)
    with pytest.raises(DeadlineExceeded):
        g.acquire(Chain(), a, 0.05)
    threading.Timer(0.05, lambda: g.release(holder, a)).start()
    other = Chain()
    g.acquire(other, a, 2)
    g.release(other, a)


def test_the_wait_context_is_entered_only_when_the_actor_is_busy() -> None:
    """An event gives its run slot (and its thread's place) up only to wait for another
    event's actor, not on every call: a free actor is taken at once."""
    g, a = CallGraph(), slot("a")
    entered: list[str] = []

    class Waiting:
        def __enter__(self) -> None:
            entered.append("wait")

        def __exit__(self, *exc: object) -> None:
            entered.append("back")

    first, second = Chain(), Chain()
    g.acquire(first, a, 1, Waiting)
    assert entered == []
    released = threading.Timer(0.05, lambda: g.release(first, a))
    released.start()
    g.acquire(second, a, 5, Waiting)  # busy: waits, inside the context
    released.join()
    assert entered == ["wait", "back"]
    g.release(second, a)
    with pytest.raises(DeadlineExceeded):  # past its deadline: not taken, even if free
        g.acquire(Chain(), a, 0, Waiting)
    assert entered == ["wait", "back"] and not a.lock.locked()
