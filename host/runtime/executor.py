"""The event threads: a pool in which only a few threads work at once, and the rest stand
in for threads that wait on the network or on another actor.

Why not a plain `ThreadPoolExecutor(16)`: it hands each new event to a thread of its own
at once, so at concurrency 8 eight events were open together: one running (the run
gate, events/event.py), the others opening their databases, converting their requests and
answers, waiting for the run slot, each a thread that wants the GIL and a wake-up to
hand it over. With only two threads (`--workers 2`) the same server did more
workflows under load: an event that ends takes the next one
from the queue itself, without a wake-up, and at most two are open. But two threads
could be stuck behind two events that wait on an outgoing fetch.

So here `active` threads (the run slots plus one, for the database of the next event to
open beside the running one) take events from the queue, and a thread that begins a
long wait (`blocking`: a fetch, a call into another process, another actor's lock, a
guest's SQLite statement still running after a tick of storage/watch.py) stops
counting, so that another thread takes the next event meanwhile, up to `max_threads`
in all. An fsync is not a long wait here: it is short, and the thread that waits for it
still holds its event's instance and connection.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from typing import Any, TypeVar

T = TypeVar("T")

log = logging.getLogger("wkhost.executor")

_local = threading.local()


class EventExecutor:
    def __init__(self, active: int, max_threads: int, name: str = "wk-event") -> None:
        if not 1 <= active <= max_threads:
            raise ValueError(f"active threads must be 1..{max_threads}, got {active}")
        self.active_limit = active
        self.max_threads = max_threads
        self._name = name
        self._cv = threading.Condition(threading.Lock())
        self._queue: deque[tuple[Future[Any], Callable[..., Any], tuple[Any, ...]]] = deque()
        self._active = 0   # threads running an event and not in a long wait
        self._idle = 0     # threads waiting for an event to take
        # Threads woken (or started) for the queue that have yet to look at it: without
        # them counted, a burst of submits would wake (or start) a thread per event.
        self._waking = 0
        self._threads = 0
        self._started = 0
        self._shutdown = False

    def submit(self, fn: Callable[..., T], *args: Any) -> Future[T]:
        fut: Future[T] = Future()
        with self._cv:
            if self._shutdown:
                raise RuntimeError("the executor has shut down")
            self._queue.append((fut, fn, args))
            self._wake_one()
        return fut

    def _wake_one(self) -> None:
        """Wake or start a thread for the queue, if one more may work (holding _cv).

        Only here do events wait for a thread that is not already looking: a thread that
        ends an event, or stops waiting, looks at the queue itself."""
        if len(self._queue) <= self._waking or self._active + self._waking >= self.active_limit:
            return
        if self._idle > self._waking:
            self._cv.notify()
        elif self._threads < self.max_threads:
            self._started += 1
            try:
                threading.Thread(target=self._work, name=f"{self._name}_{self._started}",
                                 daemon=True).start()
            except RuntimeError as e:  # out of threads: the queue waits for a working one
                log.warning("no new event thread (%s); %d work", e, self._threads)
                return
            self._threads += 1
        else:
            return
        self._waking += 1

    def _work(self) -> None:
        _local.worker = self
        started = True  # started by _wake_one: counted as waking until it looks
        while True:
            with self._cv:
                if started:
                    started = False
                    self._waking = max(0, self._waking - 1)
                while not (self._queue and self._active < self.active_limit):
                    if self._shutdown:
                        self._threads -= 1
                        return
                    self._idle += 1
                    self._cv.wait()
                    self._idle -= 1
                    self._waking = max(0, self._waking - 1)
                fut, fn, args = self._queue.popleft()
                self._active += 1
            try:
                if fut.set_running_or_notify_cancel():
                    try:
                        result = fn(*args)
                    except BaseException as e:  # handed to whoever waits on the future
                        fut.set_exception(e)
                    else:
                        fut.set_result(result)
            finally:
                del fut, fn, args
                with self._cv:
                    self._active -= 1

    @contextlib.contextmanager
    def blocking(self) -> Iterator[None]:
        """A long wait of this thread's event: another thread may take the next event.

        A no-op on a thread that is not one of this executor's (a test calling the host
        directly) and inside another long wait. Back from it, the thread counts again at
        once, even past the limit, since it holds its actor's lock: new events wait until
        the count is below the limit again."""
        if getattr(_local, "worker", None) is not self or getattr(_local, "long_wait", False):
            yield
            return
        _local.long_wait = True
        with self._cv:
            self._active -= 1
            self._wake_one()
        try:
            yield
        finally:
            with self._cv:
                self._active += 1
            _local.long_wait = False

    def counted_here(self) -> bool:
        """This thread is one of this executor's and counts among the working ones."""
        return getattr(_local, "worker", None) is self and not getattr(_local, "long_wait", False)

    def lend_place(self) -> None:
        """`blocking`'s start on behalf of a thread stuck in a long call, from another
        thread (storage/watch.py): another thread may take the next event."""
        with self._cv:
            self._active -= 1
            self._wake_one()

    def reclaim_place(self) -> None:
        """`blocking`'s end, on the thread whose place was lent."""
        with self._cv:
            self._active += 1

    def shutdown(self, cancel_futures: bool = False) -> None:
        """Take no more events; with `cancel_futures`, cancel those not yet started. Idle
        threads end now, the others once the queue is empty (daemons: a running event is
        not waited for here)."""
        with self._cv:
            self._shutdown = True
            if cancel_futures:
                while self._queue:
                    self._queue.popleft()[0].cancel()
            self._cv.notify_all()
