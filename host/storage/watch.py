"""Guest SQL statements that run long: cut at their event's deadline, and off the run slot.

SQLite's work burns no fuel, and a statement's thread is inside SQLite until it ends, so
only another thread can act for it. This one looks at the running guest statements every
`TICK_S`:
- A statement past its event's deadline is interrupted (`Connection.interrupt`, which is
  safe from any thread). SQLite stops it at its next VM step; a single step (one function
  call on a value of up to the value cap) runs to its end first.
- A statement running for longer than a tick has its run slot and its place among the
  working event threads lent to other events, so that hostile or merely heavy SQL holds
  no neighbour up. Its own thread takes both back when the statement ends.

Why a thread and not SQLite's progress handler: the handler runs only every N VM steps,
and a step can be one call of `randomblob` or `instr` on a large value, so a statement of
few steps would neither see its deadline nor give its slot up.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import apsw

# How often the watch looks: the longest a neighbour waits for a slot held by a long
# statement, and how far past its deadline a statement of many short steps runs.
TICK_S = 0.002
# Looks that find nothing running before the watch sleeps until a statement begins: an
# idle host wakes for nothing, and a busy one, whose statements come and go between
# looks, does not pay a wake-up per statement.
IDLE_LOOKS = 50

# What a long statement's thread lends (its run slot, its place among the working event
# threads): `lend` gives them to other events, and returns what takes them back.
Loan = Callable[[], Callable[[], None]]


class Running:
    """One guest statement while it runs."""

    __slots__ = ("conn", "deadline", "started", "loan", "lent", "ended", "lock")

    def __init__(self, conn: apsw.Connection, deadline: float, loan: Loan | None) -> None:
        self.conn = conn
        self.deadline = deadline
        self.started = time.monotonic()
        self.loan = loan
        self.lent: Callable[[], None] | None = None  # what takes the loan back
        self.ended = False
        self.lock = threading.Lock()


class StatementWatch:
    def __init__(self, tick_s: float = TICK_S, own_thread: bool = True) -> None:
        """With `own_thread` False, nothing looks but whoever calls `look` (tests)."""
        self._tick_s = tick_s
        self._own_thread = own_thread
        self._running: set[Running] = set()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self._asleep = False
        self._wake = threading.Event()

    def begin(self, conn: apsw.Connection, deadline: float, loan: Loan | None) -> Running:
        if self._thread is None and self._own_thread:
            self._start()
        r = Running(conn, deadline, loan)
        self._running.add(r)  # a set's add and discard are atomic under the GIL
        # After the add: the watch reads `_running` after it says it sleeps, so either it
        # sees this statement or this sees it asleep.
        if self._asleep:
            self._wake.set()
        return r

    def end(self, r: Running) -> None:
        """On the statement's own thread, once it has returned: take back what it lent."""
        self._running.discard(r)
        with r.lock:
            r.ended = True
            take_back = r.lent
        if take_back is not None:
            take_back()

    def _start(self) -> None:
        with self._start_lock:
            if self._thread is None:
                # A daemon: it holds nothing, and a statement that outlives its host is
                # interrupted by its own deadline all the same.
                self._thread = threading.Thread(target=self._run, name="wk-sql-watch",
                                                daemon=True)
                self._thread.start()

    def _run(self) -> None:
        empty_looks = 0
        while True:
            time.sleep(self._tick_s)
            if self._running:
                empty_looks = 0
                self.look(time.monotonic())
                continue
            empty_looks += 1
            if empty_looks >= IDLE_LOOKS:
                self._sleep_until_a_statement()
                empty_looks = 0

    def _sleep_until_a_statement(self) -> None:
        self._wake.clear()
        self._asleep = True
        if not self._running:  # read after `_asleep` is said: see `begin`
            self._wake.wait()
        self._asleep = False

    @property
    def asleep(self) -> bool:
        """Is the watch's thread waiting for a statement (tests)?"""
        return self._asleep

    def look(self, now: float) -> None:
        """One pass over the running statements (the watch's thread; tests call it).

        Under the statement's lock, and only while it has not ended: its connection may
        be closed once it has, and an interrupt of a closed connection is undefined."""
        for r in list(self._running):
            late = now > r.deadline
            lend = r.loan is not None and r.lent is None and now - r.started >= self._tick_s
            if not (late or lend):
                continue
            with r.lock:
                if r.ended:
                    continue
                if late:
                    r.conn.interrupt()
                if lend and r.lent is None:
                    assert r.loan is not None
                    r.lent = r.loan()


# One for the process: statements of every host in it are watched by one thread.
WATCH = StatementWatch()
