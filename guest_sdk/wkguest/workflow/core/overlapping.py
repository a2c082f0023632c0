"""Step functions that are coroutines (`async def`), and a group's step branches whose
waits overlap.

A step's function may be `async` and await wkguest.overlap's `fetch`, `call` and
`gather`. A step on its own position runs its coroutine to its end inside its attempt
(`run_alone`), under the step's timeout as a plain function runs. A group's step branch
hands its coroutine to the group's `Overlap` instead (`take`): the group starts every
branch that is due, then drives their coroutines together on one loop
(wkguest/overlap_loop.py), and ends each attempt as its coroutine ends, in the order
they end; so the branches' requests are in flight at once, and the group costs about its
slowest branch, not the sum. An overlapping attempt's timeout caps each request it
starts (nothing narrows the event's deadline: several attempts run at once), and an
attempt whose coroutine ends past its timeout is timed out as any is.

Each coroutine resumes with its attempt as the one whose code runs (`wf.step_context`),
its fetches keyed by its attempt (wkguest/idempotency.py), and the cursor's
no-nesting rule kept over each of its resumptions (`busy_while`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Coroutine, Generator
from typing import Any

from ... import idempotency
from ...overlap_loop import Loop, Task
from ..backend import Backend
from . import timeouts
from .frontier import Frontier
from .tx import Transaction
from .under_way import Attempt

Coro = Coroutine[Any, Any, Any]


class Overlapped:
    """What an overlapping attempt comes to for now: its coroutine is in flight."""

    def __repr__(self) -> str:
        return "PENDING"


PENDING = Overlapped()


def take(front: Frontier, att: Attempt, coro: Coro, keys: idempotency.Keys | None,
         tx: Transaction | None, timeout_ms: int | None,
         finish: Callable[[Task], Any]) -> Any:
    """`att`'s function made `coro`: its value (run alone), or PENDING (its group drives
    it, and `finish(task)` ends the attempt when it ends). Raises what it raised."""
    if tx is not None:
        coro.close()
        raise TypeError("a tx step's function cannot be async: its writes commit with its "
                        "result, inside one event's transaction")
    overlap: Overlap | None = att.slot.overlap
    if overlap is None:
        return timeouts.call(front.db, lambda: run_alone(coro, keys), timeout_ms)
    overlap.add(att, coro, keys, finish)
    return PENDING


def run_alone(coro: Coro, keys: idempotency.Keys | None) -> Any:
    task = Task(coro, keys=keys)
    Loop([task]).run()
    if task.error is not None:
        raise task.error
    return task.value


class Overlap:
    """The coroutines of one group's step branches, driven together in one run."""

    def __init__(self, front: Frontier) -> None:
        self.front = front
        self.loop = Loop()
        self.tasks: list[Task] = []
        self.ended: deque[tuple[int, Any]] = deque()  # (branch, its outcome), as they end

    def add(self, att: Attempt, coro: Coro, keys: idempotency.Keys | None,
            finish: Callable[[Task], Any]) -> None:
        front, idx = self.front, att.slot.idx

        def switch(on: bool) -> None:
            front.running = att if on else None

        task = Task(coro, switch=switch, keys=keys,
                    within_ms=_within(front.db, att.deadline),
                    ended=lambda t: self.ended.append((idx, finish(t))))
        self.tasks.append(task)
        self.loop.add(task)

    def next_ended(self) -> tuple[int, Any] | None:
        """The next branch whose attempt ended, and what it came to (the slot's answer);
        None once none is in flight."""
        while not self.ended and self.loop.busy:
            self.loop.turn()
        return self.ended.popleft() if self.ended else None

    def abandon(self) -> None:
        """The group settled: the coroutines still in flight are closed (their requests
        are the host's to drop), their attempts counted and never ended, as a kill
        leaves them."""
        for t in self.tasks:
            if not t.done:
                t.coro.close()


def _within(db: Backend, deadline: int | None) -> Callable[[], int | None] | None:
    """How long a request of an attempt may take: until its timeout's deadline."""
    if deadline is None:
        return None
    return lambda: max(1, deadline - db.now())


def busy_while(coro: Coro, busy: Callable[[bool], None]) -> Coro:
    """`coro`, with `busy(True)` while each of its resumptions runs and `busy(False)`
    between them: the cursor's rule that a step's code calls no workflow primitive."""
    return _busy(coro, busy)


async def _busy(coro: Coro, busy: Callable[[bool], None]) -> Any:
    return await _Busy(coro, busy)


class _Busy:
    __slots__ = ("coro", "busy")

    def __init__(self, coro: Coro, busy: Callable[[bool], None]) -> None:
        self.coro, self.busy = coro, busy

    def __await__(self) -> Generator[Any, Any, Any]:
        value: Any = None
        error: BaseException | None = None
        while True:
            self.busy(True)
            try:
                asked = self.coro.throw(error) if error is not None else self.coro.send(value)
            except StopIteration as stop:
                return stop.value
            finally:
                self.busy(False)
            try:
                value, error = (yield asked), None
            except GeneratorExit:  # closed (abandoned, or collected): close its code too
                self.coro.close()
                raise
            except BaseException as e:  # thrown in by the loop
                value, error = None, e
