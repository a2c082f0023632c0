"""host/events/holds.py: reading a hold from an answer's headers, and the held futures by actor."""

from __future__ import annotations

import asyncio
import threading

import pytest
from wkhost.errors import Overloaded
from wkhost.events.holds import MAX_HOLD_MS, Holds, is_hold_header, parse_hold
from wkhost.types import ActorRef

A = ActorRef("c", "a")
B = ActorRef("c", "b")


@pytest.mark.parametrize(("value", "ms"), [
    ("250", 250), (" 250 ", 250), ("1", 1), (str(MAX_HOLD_MS * 10), MAX_HOLD_MS),
    ("0", 0), ("", 0), ("-5", 0), ("+5", 0), ("2.5", 0), ("3e4", 0), ("abc", 0),
    ("\uff13", 0),  # a digit to str.isdigit, not a number of milliseconds
])
def test_a_hold_is_a_whole_number_of_ms(value: str, ms: int) -> None:
    assert parse_hold([("content-type", "x"), ("WK-Hold-Ms", value)]) == (ms, None)


def test_the_state_is_kept_only_when_printable_and_short() -> None:
    assert parse_hold([("wk-hold-ms", "5"), ("wk-hold-state", "created")]) == (5, "created")
    assert parse_hold([("wk-hold-ms", "5"), ("wk-hold-state", "a\nb")]) == (5, None)
    assert parse_hold([("wk-hold-ms", "5"), ("wk-hold-state", "x" * 257)]) == (5, None)
    assert parse_hold([]) == (0, None)
    assert is_hold_header("Wk-Hold-State") and not is_hold_header("wk-holder")


def test_an_actors_event_completes_only_its_own_holds() -> None:
    holds = Holds()
    a1, a2, b1 = holds.add(A), holds.add(A), holds.add(B)
    assert a1 and a2 and b1 and holds.count() == 3
    holds.wake(A)
    assert a1.done() and a2.done() and not b1.done() and holds.count() == 1
    holds.wake(A)  # nothing left for A: nothing happens
    holds.discard(B, b1)
    assert holds.count() == 0
    holds.wake(B)
    assert not b1.done()


def test_a_hold_whose_time_ran_out_survives_a_late_wake() -> None:
    holds = Holds()
    fut = holds.add(A)
    assert fut is not None and fut.cancel()  # the loop gave up on it
    holds.wake(A)  # no InvalidStateError
    assert holds.count() == 0


def test_closing_completes_every_hold_and_refuses_new_ones() -> None:
    holds = Holds()
    futs = [holds.add(ref) for ref in (A, A, B)]
    holds.close()
    assert all(f is not None and f.done() for f in futs)
    assert holds.add(A) is None and holds.closed and holds.count() == 0


def test_wakes_from_many_threads_complete_every_hold() -> None:
    holds = Holds()
    refs = [ActorRef("c", str(i)) for i in range(50)]
    futs = [holds.add(r) for r in refs for _ in range(4)]
    threads = [threading.Thread(target=holds.wake, args=(r,)) for r in refs * 2]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(f is not None and f.done() for f in futs) and holds.count() == 0


class _Busy:
    """A host whose queue is full: every submit is refused."""

    def __init__(self) -> None:
        self.holds = Holds()
        self.submits = 0

    def submit(self, *_: object) -> None:
        self.submits += 1
        raise Overloaded("the host is at its limit of waiting events; retry shortly")


def test_a_held_answer_stands_when_the_host_cannot_deliver_it_again() -> None:
    from wkhost.net.frontdoor import _held
    from wkhost.types import Request, Response, Sender

    host = _Busy()
    fut = host.holds.add(A)
    assert fut is not None
    held = Response(200, [], b"running", hold=fut, hold_ms=30_000)
    host.holds.wake(A)  # the actor's next event ended
    out = asyncio.run(_held(host, A, Request(), Sender.public(), held,  # type: ignore[arg-type]
                            lambda: False, {}))  # no client trace
    assert host.submits == 1 and out.body == b"running" and out.hold is None
