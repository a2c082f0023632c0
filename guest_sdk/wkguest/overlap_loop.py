"""The loop that drives wkguest's coroutines (overlap.py's `run`, a workflow's group):
each runs until it awaits a request (`Request`, started then) or a gather of others
(`Gather`), and the loop waits, through WIT `overlap.wait-any`, for the first request
to end of all those in flight. Deterministic: ready coroutines resume in the order they
became ready, and requests that ended together are taken in the order they started.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable, Coroutine, Generator, Iterable
from typing import Any, Protocol, TypeVar, cast

from wkguest import idempotency
from wkguest.codec import from_wire
from wkguest.errors import CallError, CallErrorKind, FetchError, FetchKind
from wkguest.types import HttpResponse, Response

T = TypeVar("T")


def _wit() -> Any:
    """The bindings, looked up when a request runs: this module is imported by the
    workflow runner, which imports on plain CPython too (where they do not exist, but
    for the test kit's). A component imported them with the app (actor.py)."""
    from wkguest import _bindings
    return _bindings


class Startable(Protocol):
    fetches: bool  # a fetch (else an actor call)

    def start(self, within_ms: int | None) -> int:
        """Start it, cut after `within_ms` if given: its handle. Raises the bindings' Err."""


class Request:
    """An awaitable `fetch` or `call`: it yields itself to the loop, which starts it and
    sends its answer back (or throws its error in)."""

    __slots__ = ("what",)

    def __init__(self, what: Startable) -> None:
        self.what = what

    def __await__(self) -> Generator[Any, Any, Any]:
        answer = yield self  # the loop's: its answer, or its error thrown in
        return answer


class Gather:
    __slots__ = ("aws",)

    def __init__(self, aws: tuple[Awaitable[Any], ...]) -> None:
        self.aws = aws

    def __await__(self) -> Generator[Any, Any, list[Any]]:
        values = yield self
        return cast(list[Any], values)


def _answer(ended: Any) -> Any:
    """What an ended request gives its coroutine: its answer, or its error raised."""
    v, o = ended.value, _wit().overlap
    if isinstance(ended, o.Ended_Fetched):
        return HttpResponse(int(v.status), list(v.headers), from_wire(v.body))
    if isinstance(ended, o.Ended_Called):
        return Response(int(v.status), list(v.headers), from_wire(v.body))
    kind = v.kind.name.lower().replace("_", "-")
    if isinstance(ended, o.Ended_FetchFailed):
        raise FetchError.from_reason(str(v.message), cast(FetchKind, kind))
    raise CallError(str(v.message), cast(CallErrorKind, kind))


# Requests that ended while a loop other than theirs waited (a loop run inside a
# coroutine of another: `overlap.run` called from a step's code): by handle, until their
# own loop looks. WIT `overlap.wait-any` waits on every request of the event.
_ENDED: dict[int, Any] = {}
# An event has at most 64 requests in flight (the host's cap), so only an abandoned
# request's end (its loop closed: a group that settled) is ever dropped past this.
_KEPT = 256


class Task:
    """One coroutine the loop drives: its value or error once it ended (`done`).

    `switch(True)` is called before each resumption and `switch(False)` after: what a
    workflow's branch uses to make its attempt the one whose code runs. `within_ms()`,
    if given, caps each request it starts (an attempt's timeout). `keys`: its fetches'
    idempotency keys. `ended`: called once it ended."""

    __slots__ = ("coro", "switch", "within_ms", "keys", "ended", "done", "value", "error",
                 "_parent", "_children")

    def __init__(self, coro: Coroutine[Any, Any, Any], *,
                 switch: Callable[[bool], None] | None = None,
                 within_ms: Callable[[], int | None] | None = None,
                 keys: idempotency.Keys | None = None,
                 ended: Callable[[Task], None] | None = None) -> None:
        self.coro, self.switch, self.within_ms = coro, switch, within_ms
        self.keys, self.ended = keys, ended
        self.done, self.value, self.error = False, None, cast(BaseException | None, None)
        self._parent: Task | None = None
        self._children: list[Task] = []


class Loop:
    """Drives tasks until they end: each runs until it awaits a request, which starts
    then, and the loop waits for the first request to end of all those in flight."""

    def __init__(self, tasks: Iterable[Task] = ()) -> None:
        self._ready: deque[tuple[Task, Any, BaseException | None]] = deque()
        # a request's handle: the task awaiting it, and whether it is a fetch
        self._waiting: dict[int, tuple[Task, bool]] = {}
        for t in tasks:
            self.add(t)

    def add(self, task: Task) -> None:
        self._ready.append((task, None, None))

    @property
    def busy(self) -> bool:
        return bool(self._ready or self._waiting)

    def run(self) -> None:
        """Until every task ended."""
        while self.busy:
            self.turn()

    def turn(self) -> None:
        """Resume what is ready, or wait for the first request to end."""
        if self._ready:
            task, value, error = self._ready.popleft()
            self._resume(task, value, error)
            return
        handle, ended = next(((h, _ENDED.pop(h)) for h in self._waiting if h in _ENDED),
                             (None, None))
        while handle is None:
            got = _wit().overlap.wait_any(None)
            if got is None:  # the event's deadline passed: every wait ends with it
                for task, fetched in self._waiting.values():
                    self._ready.append((task, None, _deadline_passed(fetched)))
                self._waiting.clear()
                return
            if got[0] in self._waiting:
                handle, ended = got
            else:  # another loop's (one driving this loop's caller): kept for it
                _ENDED[got[0]] = got[1]
                if len(_ENDED) > _KEPT:  # the oldest: requests whose loop is gone
                    del _ENDED[next(iter(_ENDED))]
        task, _ = self._waiting.pop(handle)
        try:
            self._ready.append((task, _answer(ended), None))
        except (FetchError, CallError) as e:
            self._ready.append((task, None, e))

    def _resume(self, task: Task, value: Any, error: BaseException | None) -> None:
        outer = idempotency.current
        idempotency.current = task.keys
        if task.switch is not None:
            task.switch(True)
        try:
            asked = task.coro.throw(error) if error is not None else task.coro.send(value)
        except StopIteration as stop:
            self._end(task, stop.value, None)
            return
        except Exception as e:
            self._end(task, None, e)
            return
        finally:
            if task.switch is not None:
                task.switch(False)
            idempotency.current = outer
        self._asked(task, asked)

    def _asked(self, task: Task, asked: Any) -> None:
        if isinstance(asked, Request):
            self._start(task, asked)
        elif isinstance(asked, Gather):
            self._gather(task, asked)
        else:
            self._ready.append((task, None, TypeError(
                f"a coroutine run by wkguest awaited {asked!r}: only wkguest.overlap's "
                "fetch, call and gather (and coroutines awaiting them) can be awaited in "
                "a component; asyncio's loop cannot run there")))

    def _start(self, task: Task, req: Request) -> None:
        outer = idempotency.current
        idempotency.current = task.keys
        try:
            within = task.within_ms() if task.within_ms is not None else None
            handle = req.what.start(within)
        except _wit().Err as e:  # refused: too many in flight
            error: Exception = FetchError.from_reason(str(e.value), "denied") \
                if req.what.fetches else CallError(str(e.value), "refused")
            self._ready.append((task, None, error))
            return
        finally:
            idempotency.current = outer
        self._waiting[handle] = (task, req.what.fetches)

    def _gather(self, task: Task, g: Gather) -> None:
        forks = task.keys.fork(len(g.aws)) if task.keys is not None else None
        task._children = [
            Task(_awaited(a), switch=task.switch, within_ms=task.within_ms,
                 keys=None if forks is None else forks[i])
            for i, a in enumerate(g.aws)]
        if not task._children:
            self._ready.append((task, [], None))
            return
        for child in task._children:
            child._parent = task
            self.add(child)

    def _end(self, task: Task, value: Any, error: BaseException | None) -> None:
        task.done, task.value, task.error = True, value, error
        if task.ended is not None:
            task.ended(task)
        parent = task._parent
        if parent is not None and all(c.done for c in parent._children):
            children, parent._children = parent._children, []
            failed = next((c.error for c in children if c.error is not None), None)
            values = [c.value for c in children]
            self._ready.append((parent, None if failed else values, failed))


def _deadline_passed(fetched: bool) -> Exception:
    why = "the event's deadline passed while the request was in flight"
    return FetchError("timeout", why) if fetched else CallError(f"timeout: {why}", "deadline")


async def _awaited(a: Awaitable[T]) -> T:
    return await a
