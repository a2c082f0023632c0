"""What the host knows about the event a thread is running.

A host function learns which actor called it from the thread: a guest only runs on the
thread that called into it, and a nested `actors.call` pushes the callee on the same
thread's stack and pops it when the callee returns. So the top of the thread's stack is
always the actor whose guest is executing. Who holds each actor, and who waits for whom,
is the call graph's (call_graph.py).
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import HostError
from ..runtime.run_gate import RunGate
from ..storage.watch import Loan
from ..traps import GuestException, TrapReason
from ..types import ActorRef

if TYPE_CHECKING:
    from .actor_slot import ActorSlot


class ActorGone(HostError):
    """An event that must not create its actor found none."""

    kind = "_Gone"  # the name it has always crossed processes under


@dataclass
class Chain:
    """One chain of nested calls, on one thread: the actors it holds, in call order."""

    stack: list[ActorRef] = field(default_factory=list)
    waiting_for: ActorRef | None = None


@dataclass
class Event:
    slot: ActorSlot
    kind: str                  # "init" | "alarm" | "request"
    deadline: float            # time.monotonic() when the event's wall budget runs out
    chain: Chain
    gate: RunGate
    # For a wait that may be long (Host.long_wait): the run slot and the thread's place
    # among the working event threads both serve other events meanwhile.
    long_wait: Callable[[], AbstractContextManager[object]] = contextlib.nullcontext
    # Called on the thread of a guest statement as it starts: what the statement lends if
    # it runs long (storage/watch.py), or None.
    statement_loan: Callable[[], Loan | None] = lambda: None
    _loan: Loan | None = field(default=None, repr=False)  # `loan()`'s, once made
    _loan_made: bool = field(default=False, repr=False)
    delete_requested: bool = False
    alarm_touched: bool = False   # the guest set or cleared its alarm in this event
    trapped: TrapReason | None = None  # why the guest's call trapped or was cut, if it was
    # --cluster: why nothing of the event may be acknowledged (its copy's write was
    # refused), as its end found it (events/settle.py); read once, by events/lifecycle.py.
    refused: Exception | None = None
    answered: bool = False  # its body answered, or trapped (GuestFailed)
    # What the guest reported it was about to trap on (lifecycle.report-exception), in the
    # current call into it.
    exception: GuestException | None = None
    trap_read: bool = False       # the guest asked for its last trap (lifecycle.last-trap)
    published: bool = False       # the guest published its attributes (WIT attributes)
    read_only: bool = False       # the guest made the rest of it read-only (lifecycle.read-only)
    # The last failed sqlite, actors and http call's (kind, message), for their `last-error`.
    sql_error: tuple[str, str] | None = None
    call_error: tuple[str, str] | None = None
    fetch_error: tuple[str, str] | None = None
    # The requests it started without waiting (WIT overlap: interfaces/overlap.py's
    # InFlight), once it started one.
    in_flight: Any = None
    # For the metrics (host/metrics.py): how the event ended, if a call into its guest
    # trapped (else None), and the fuel its guest calls burned.
    outcome: str | None = None
    guest_spans: Any = None  # host/guest_spans.py's GuestSpans, once the guest traces
    fuel: int = 0
    # A request whose answer asked to be held (events/holds.py): how long, and, once the
    # event has ended, the future that the actor's next event completes.
    hold_ms: int = 0
    hold: Future[None] | None = None
    # lifecycle.narrow-deadline: the deadline the guest set itself (time.monotonic()),
    # and whether its Store's epoch deadline is at it (a trap then is NARROWED, not the
    # wall budget's). Each call into the guest starts without it (events/lifecycle.py).
    limit: float = math.inf
    limit_traps: bool = False
    # What bounds a host call: min(deadline, limit), kept as one attribute to read, as
    # host calls did `deadline` before.
    bound: float = field(init=False)

    def __post_init__(self) -> None:
        self.bound = self.deadline

    def narrow(self, within_ms: int | None) -> None:
        """lifecycle.narrow-deadline: bound the event by `within_ms` from now too, or
        (None) by its own deadline alone; the guest's code traps at the sooner."""
        now = time.monotonic()
        self.limit = math.inf if within_ms is None else now + within_ms / 1000
        self.bound = min(self.deadline, self.limit)
        self.limit_traps = self.limit < self.deadline
        self._arm(now)

    def unnarrow(self) -> None:
        """Each call into the guest starts without a narrowed deadline."""
        self.limit, self.limit_traps, self.bound = math.inf, False, self.deadline

    def cut_by_limit(self) -> bool:
        """Whether a host call that failed just now was cut by the narrowed deadline. If
        so, the guest's code may run on to handle the error, as far as the event's own
        deadline: else it would trap as soon as it resumed, the deadline being past."""
        now = time.monotonic()
        if not self.limit <= now < self.deadline:
            return False
        if self.limit_traps:
            self.limit_traps = False
            self._arm(now)
        return True

    def _arm(self, now: float) -> None:
        """Set the running guest's epoch deadline to what should trap it now."""
        inst = self.slot.instance
        if inst is not None:
            until = self.limit if self.limit_traps else self.deadline
            inst.set_wall(max(0.0, (until - now) * 1000))

    def loan(self) -> Loan | None:
        """`statement_loan()`, made at the event's first guest statement and kept: every
        guest statement of the event runs on its thread, holding the same run slot and
        place, so one loan serves them all (a statement costs no closures)."""
        if not self._loan_made:
            self._loan, self._loan_made = self.statement_loan(), True
        return self._loan

    def remaining_s(self) -> float:
        return self.deadline - time.monotonic()


_local = threading.local()


def stack() -> list[Event]:
    s: list[Event] | None = getattr(_local, "events", None)
    if s is None:
        s = _local.events = []
    return s


def current() -> Event:
    return stack()[-1]
