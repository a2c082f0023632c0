"""Requests to actors: from outside (the public, an operator), from an actor of this
process, and from an actor of another one; who may reach a class, the caps on bodies,
the deadline, and the hold an answer may ask for (events/holds.py)."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future
from contextlib import AbstractContextManager
from typing import Any, Protocol

from ..config import HostConfig
from ..errors import BudgetExceeded, DeadlineExceeded, NotOwnerNow, TooLarge, call_kind
from ..interfaces.records import request_record, response_from_record, sender_variant
from ..placement import Placement
from ..testing import Switches
from ..types import ActorRef, Request, Response, Sender
from . import holds
from .actor_slot import ActorSlot
from .classes import ActorClass, check_access, check_protocol
from .event import Chain, Event
from .remote import CallsElsewhere, not_served_here
from .seams import CallExport, RunEvent


class Caller(Protocol):
    """Who makes an actor's call, as `call_from_actor` reads it: an Event, or a call
    made beside one (`_Beside`)."""

    @property
    def chain(self) -> Chain: ...

    @property
    def bound(self) -> float: ...

    def cut_by_limit(self) -> bool: ...


class Requests:
    def __init__(self, *, config: HostConfig, classes: dict[str, ActorClass],
                 holds: holds.Holds, remote: CallsElsewhere | None, run_event: RunEvent,
                 call_export: CallExport,
                 long_wait: Callable[[], AbstractContextManager[object]],
                 testing: Switches, placement: Placement) -> None:
        """`placement`: who serves an actor (host/placement.py): this process of the
        host's, or, in cluster mode, this node (core/cluster_node.py). `remote`: how an
        actor served elsewhere is called; none where the placement answers only here."""
        self._config = config
        self._placement = placement
        self._testing = testing
        self._classes = classes
        self._holds = holds
        self._remote = remote
        self._run_event = run_event
        self._call_export = call_export
        self._long_wait = long_wait

    def _handle(self, slot: ActorSlot, ev: Event, record: Any, sender: Sender) -> Any:
        return self._call_export(slot, ev, "handle", (record, sender_variant(sender)))

    # -- from outside ---------------------------------------------------------------------
    def request(self, ref: ActorRef, req: Request, sender: Sender, may_hold: bool,
                again: bool) -> Response:
        """See Host.request."""
        cls = self._classes[ref.cls]
        check_access(cls, sender)
        check_protocol(cls, req.headers)
        cap = self._config.max_body_bytes
        if len(req.body) > cap:
            raise TooLarge(f"the body is over the {cap}-byte cap")
        record = request_record(req)
        answer = _Answer(lambda slot, ev: self._handle(slot, ev, record, sender), may_hold)
        deadline = time.monotonic() + self._config.wall_budget_ms / 1000
        try:
            out = self._run_event(ref, "request", Chain(), deadline, answer.body,
                                  wakes_holds=not again)
            resp = response_from_record(out, cap)
        except BaseException:
            if answer.hold is not None:  # nobody will wait on it
                self._holds.discard(ref, answer.hold)
            raise
        return answer.response(resp)

    # -- from actors ----------------------------------------------------------------------
    def call_from_actor(self, ref: ActorRef, record: Any, sender: Sender, caller: Caller
                        ) -> Any:
        """`actors.call` (interfaces/actors.py, through core/links.py): the request and
        response records pass through unconverted. Who serves `ref` is asked once; one
        served elsewhere is called through `remote`, while this event's run slot serves
        others."""
        if self._testing.crash_armed:
            self._testing.crash(f"call:{ref.cls}")
        cap = self._config.max_body_bytes
        if len(record.body) > cap:  # Latin-1 on the wire: one character per byte
            raise TooLarge(f"the request body is over the {cap}-byte cap")
        deadline = min(caller.bound,
                       time.monotonic() + self._config.wall_budget_ms / 1000)
        try:
            where = self._placement.where(ref.id)  # asked once, passed on
            if not where.here:
                if self._remote is None:
                    # net/serve.py and net/cluster.py give one to a Host whose placement
                    # may answer elsewhere; an embedder's Host without one refuses.
                    raise not_served_here(ref, where)
                try:
                    with self._long_wait():
                        return self._remote.call(ref, record, sender, caller.chain.stack,
                                                 deadline, where)
                except NotOwnerNow:
                    if not self._placement.where(ref.id).here:  # nothing ran; not here
                        raise
            return self.call_here(ref, record, sender, caller.chain, deadline)
        except (DeadlineExceeded, BudgetExceeded) as e:
            # The callee's event had the caller's narrowed deadline as its own, too.
            if caller.cut_by_limit():
                raise DeadlineExceeded(
                    f"the call to {ref} passed the deadline the event set itself "
                    f"(lifecycle.narrow-deadline): {call_kind(e)}: {e}") from None
            raise

    def call_beside(self, ref: ActorRef, record: Any, sender: Sender, caller: Event,
                    deadline: float) -> Any:
        """An actor call that `caller` started without waiting for it (WIT `overlap`),
        made on another thread by `deadline`: as `call_from_actor`, on a chain of its
        own that begins as a copy of the caller's, so that re-entry into any actor of
        the caller's chain is still refused."""
        return self.call_from_actor(ref, record, sender, _Beside(caller, deadline))

    def call_here(self, ref: ActorRef, record: Any, sender: Sender, chain: Chain,
                  deadline: float) -> Any:
        """See Host.call_here: who serves `ref` was asked where the call came in."""
        check_protocol(self._classes[ref.cls], record.headers)
        cap = self._config.max_body_bytes
        out = self._run_event(ref, "request", chain, deadline,
                              lambda slot, ev: self._handle(slot, ev, record, sender))
        if len(out.body) > cap:
            raise TooLarge(f"{ref}'s response body ({len(out.body)} bytes) is over the "
                           f"{cap}-byte cap")
        return out


class _Beside:
    """The caller of a call made beside its event (`call_beside`), as `call_from_actor`
    reads one: a chain of its own, and its own deadline (which no narrowing cut)."""

    def __init__(self, caller: Event, deadline: float) -> None:
        self.chain = Chain(list(caller.chain.stack))
        self.bound = deadline

    def cut_by_limit(self) -> bool:
        return False


class _Answer:
    """One request from outside as its event runs it (`handle`): the event, and the hold
    its answer asked for (ms, state), should the caller wait on one (`may_hold`)."""

    def __init__(self, handle: Callable[[ActorSlot, Event], Any], may_hold: bool) -> None:
        self._handle, self._may_hold = handle, may_hold
        self.ran: Event | None = None
        self.asked: tuple[int, str | None] = (0, None)

    @property
    def hold(self) -> Future[None] | None:
        """The future the actor's next event completes, once the event has ended."""
        return None if self.ran is None else self.ran.hold

    def body(self, slot: ActorSlot, ev: Event) -> Any:
        self.ran = ev
        out = self._handle(slot, ev)
        if self._may_hold:
            self.asked = holds.parse_hold(out.headers)
            ev.hold_ms = self.asked[0]
        return out

    def response(self, resp: Response) -> Response:
        """`resp`, with its hold, and without the host's `wk-hold-*` headers."""
        if self.hold is not None:
            resp.hold, (resp.hold_ms, resp.hold_state) = self.hold, self.asked
        if any(holds.is_hold_header(k) for k, _ in resp.headers):
            resp.headers = [(k, v) for k, v in resp.headers if not holds.is_hold_header(k)]
        return resp
