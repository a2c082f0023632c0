"""What the WIT interfaces need from the host: small ports, never the `Host` itself.

Each interface module registers its host functions on one class's Linker and reaches the
host only through these Protocols. core implements them (core/links.py) and hands them
to `make_linker`, so no interface module imports core: core sits above the interfaces,
with no import circle between them.

A host call is hot: each `register` takes the members it calls once, at link time, and
each call reads the running event once. `E` is the events' Event type, which the interfaces
only pass back (an actor call names its caller).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol, TypeVar

from ..fetch import FetchPolicy
from ..storage.actordb import ActorDb
from ..storage.watch import Loan
from ..traps import GuestException, TrapReason
from ..types import ActorRef, Sender


class EventOutput(Protocol):
    """The guest's output of the running event (events/actor_slot.py's GuestOutput)."""

    def charge(self, size: int, cap: int) -> bool: ...


class EventActor(Protocol):
    """The actor whose event is running (events/actor_slot.py's ActorSlot)."""

    @property
    def ref(self) -> ActorRef: ...

    @property
    def output(self) -> EventOutput: ...

    @property
    def last_trap(self) -> TrapReason | None: ...

    def require_db(self) -> ActorDb: ...


class EventChain(Protocol):
    """The actors of the running chain of nested calls, in call order."""

    @property
    def stack(self) -> Sequence[ActorRef]: ...


class EventGate(Protocol):
    """The run gate (runtime/run_gate.py's RunGate): a wait gives the event's run slot up."""

    def waiting(self) -> AbstractContextManager[object]: ...


class RunningEvent(Protocol):
    """The event a host function runs in (events/event.py's Event): what it reads, and the
    marks it leaves for the host to settle after the event."""

    kind: str  # "init" | "alarm" | "request"
    alarm_touched: bool
    delete_requested: bool
    trap_read: bool
    published: bool
    read_only: bool  # lifecycle.read-only: until the event ends (storage/readonly.py)
    exception: GuestException | None  # lifecycle.report-exception's, in this call
    # The last failed call's (kind, message): sqlite's, actors' and http's `last-error`.
    sql_error: tuple[str, str] | None
    call_error: tuple[str, str] | None
    fetch_error: tuple[str, str] | None
    in_flight: Any  # overlap.py's InFlight, once the event started a request without waiting
    guest_spans: Any  # host/guest_spans.py's GuestSpans (WIT trace), once begun

    @property
    def slot(self) -> EventActor: ...

    @property
    def bound(self) -> float:
        """What bounds a host call (time.monotonic()): the event's deadline, or the one
        it set itself (lifecycle.narrow-deadline) if that is sooner. One attribute read:
        every host call reads it."""

    @property
    def chain(self) -> EventChain: ...

    @property
    def gate(self) -> EventGate: ...

    def loan(self) -> Loan | None: ...

    def narrow(self, within_ms: int | None) -> None:
        """lifecycle.narrow-deadline (None lifts it)."""

    def cut_by_limit(self) -> bool:
        """Whether a host call that failed just now was cut by the deadline the event set
        itself; if so, the guest may run on to handle the error."""


E = TypeVar("E", bound=RunningEvent)
E_co = TypeVar("E_co", bound=RunningEvent, covariant=True)


class Events(Protocol[E_co]):
    """The sqlite and alarm interfaces: the running event (on this thread) only."""

    def current_event(self) -> E_co: ...


class ActorCalls(Events[E], Protocol[E]):
    """The actors interface: a synchronous call from the running event's actor."""

    @property
    def max_call_depth(self) -> int: ...

    def actor_ref(self, cls: str, actor_id: str) -> ActorRef: ...

    def call_from_actor(self, ref: ActorRef, record: Any, sender: Sender, caller: E) -> Any: ...

    def call_beside(self, ref: ActorRef, record: Any, sender: Sender, caller: E,
                    deadline: float) -> Any:
        """As `call_from_actor`, made on another thread than the caller's (WIT
        overlap), by `deadline` (time.monotonic())."""


class Fetches(Events[E_co], Protocol[E_co]):
    """The http interface: the fetch policy, and a wait that lends the event's run slot."""

    @property
    def fetch_policy(self) -> FetchPolicy: ...

    def long_wait(self) -> AbstractContextManager[object]: ...


class Lifecycle(Events[E_co], Protocol[E_co]):
    """The lifecycle interface: the host's clock, as the guest sees it, each call's fuel
    budget, and who this host is (`holder`); and the log interface's cap of each
    event's output (`output_cap`)."""

    @property
    def output_cap(self) -> int: ...

    def now_ms(self) -> int: ...

    @property
    def fuel_per_event(self) -> int: ...

    @property
    def holder(self) -> str: ...


class HostPort(ActorCalls[E], Fetches[E], Lifecycle[E], Protocol[E]):
    """Everything the linker's interfaces need, together."""
