"""Held requests: an answer that waits, at the front door, for the actor's next event.

The registry of holds lives in events/, beside the events that wake them (events/lifecycle.py
wakes and adds them while the event still holds its actor's lock); the front door
(host/net/frontdoor.py) waits on them.

A guest's `handle` may answer a request from the front door with the header
`wk-hold-ms: N`. The host then keeps that answer, does not send it yet, and waits:

- When the actor ends another event within N ms (an alarm, another request, a call from
  an actor), the host delivers the same request again. If the held answer also carried
  `wk-hold-state: S`, the request delivered again carries `wk-hold-state: S`, so the
  guest can tell it from a first delivery. The new answer takes the held one's place,
  and may hold again, up to the first hold's deadline.
- When the N ms have passed, or the host stops, or it is at its limit of waiting events
  when it would deliver again, the client gets the held answer. A request whose client
  has hung up is not delivered again.

So a client can ask "tell me when this is done" in one request, and the host keeps no
thread for it, only the connection and a future. The waiting request is woken by the
end of the actor's events, never by polling. The `wk-hold-*` headers go to the host and
no further: the host removes them from every answer it sends to a client, and from
every request a client sends (a client cannot pretend to be a delivery again).

Why delivering again is safe from a lost wake-up: a hold is registered at the end of
the event that answered, while that event still holds its actor's lock, and every
later event of the actor wakes the holds after its own work. A delivery again does not
wake the others, so two held requests never wake each other in turn.

A held answer is checked as any answer for a client is (host/wire.py, from
host/net/frontdoor.py) when the guest gives it, and so is each answer to a request delivered
again: one that no client can be sent is a 500 at once, and its hold is dropped.

An actor-to-actor call is never held: its caller is an event that cannot wait on the
callee's next event, so the caller gets the answer at once, headers as the callee set
them.
"""

from __future__ import annotations

import contextlib
import threading
from concurrent.futures import Future, InvalidStateError

from ..types import ActorRef

HOLD_MS = "wk-hold-ms"
HOLD_STATE = "wk-hold-state"
_HOLD_HEADERS = frozenset({HOLD_MS, HOLD_STATE})
# A held request costs a connection and a future. Clients commonly give up on a request
# after a minute or two, and one that wants longer asks again.
MAX_HOLD_MS = 120_000
MAX_STATE_CHARS = 256


def is_hold_header(name: str) -> bool:
    return name.lower() in _HOLD_HEADERS


def parse_hold(headers: list[tuple[str, str]]) -> tuple[int, str | None]:
    """(hold ms, state) from an answer's headers; 0 ms when it asks for no hold.

    A value that is not a whole number of at least 1 is ignored (the answer goes at
    once), and a longer one is cut to MAX_HOLD_MS; a state longer than MAX_STATE_CHARS,
    or holding a control character, is dropped."""
    ms, state = 0, None
    for name, value in headers:
        lower = name.lower()
        if lower == HOLD_MS:
            text = value.strip()
            if text.isdigit() and text.isascii():
                ms = min(int(text), MAX_HOLD_MS)
        elif lower == HOLD_STATE and len(value) <= MAX_STATE_CHARS and value.isprintable():
            state = value
    return ms, state


class Holds:
    """The futures of held requests, by actor. Used from event threads and the loop."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_ref: dict[ActorRef, list[Future[None]]] = {}
        self.closed = False

    def add(self, ref: ActorRef) -> Future[None] | None:
        """A future that the actor's next event (or the host's stop) completes; None
        once the host is stopping: the answer goes at once."""
        fut: Future[None] = Future()
        with self._lock:
            if self.closed:
                return None
            self._by_ref.setdefault(ref, []).append(fut)
        return fut

    def discard(self, ref: ActorRef, fut: Future[None]) -> None:
        """Forget a hold whose time ran out, so that an actor with no more events does
        not keep it."""
        with self._lock:
            waiting = self._by_ref.get(ref)
            if waiting is not None:
                with contextlib.suppress(ValueError):
                    waiting.remove(fut)
                if not waiting:
                    del self._by_ref[ref]

    def wake(self, ref: ActorRef) -> None:
        """The actor ended an event: deliver its held requests again."""
        if not self._by_ref:  # the common case, read without the lock: a hold added
            return            # after this read belongs to an event that ends later
        with self._lock:
            waiting = self._by_ref.pop(ref, None)
        for fut in waiting or ():
            _complete(fut)

    def close(self) -> None:
        """The host stops: every held request gets its held answer now."""
        with self._lock:
            self.closed = True
            waiting = [f for futs in self._by_ref.values() for f in futs]
            self._by_ref.clear()
        for fut in waiting:
            _complete(fut)

    def count(self) -> int:
        with self._lock:
            return sum(len(futs) for futs in self._by_ref.values())


def _complete(fut: Future[None]) -> None:
    # The loop may have cancelled it as its time ran out, just before.
    with contextlib.suppress(InvalidStateError):
        fut.set_result(None)
