"""One actor in the kit: what the host keeps of it (its database, its alarm, why its last
event trapped, what it published, logged and counted) and its answers to every WIT
import but `sqlite` (guest_sql.py).

The answers follow the host's (host/interfaces/): an alarm the event did not touch is
cleared after on_alarm returns, delete_self takes effect when the event ends, a trap's
reason is kept until an event that read it ends cleanly, and read-only refuses changes
until the event ends. What crosses to other actors and to the network is the `World`'s
(local.py): a call is the callee's event, nested; a fetch is the test's handler.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

from wkguest.codec import from_wire, to_wire
from wkguest.types import Response

from ..events.trapped import raised
from ..traps import GuestException
from .guest_sql import GuestSql

HOLDER = "the wkhost test kit (in-process)"


class CallFailed(Exception):
    """A call or fetch the world refused: `kind` is the WIT error kind's name."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class Fetch:
    """An outgoing HTTP request, as a fetch handler gets it."""

    method: str
    url: str
    headers: list[tuple[str, str]]
    body: bytes
    timeout_ms: int | None

    def json(self) -> Any:
        import json

        return json.loads(self.body)


class World(Protocol):
    """What a guest reaches beyond itself."""

    def now(self) -> int: ...

    def call_from(self, caller: Guest, cls: str, id: str, method: str, path: str,
                  query: str, headers: list[tuple[str, str]], body: bytes) -> Response: ...

    def fetch(self, caller: Guest, req: Fetch) -> Response: ...


@dataclass
class Trap:
    """Why an event trapped, as `lifecycle.last-trap-info` tells it."""

    kind: str  # the WIT trap-kind's name: GUEST, CPU, ...
    message: str
    exception: GuestException | None = None


@dataclass
class Published:
    status: str
    updated_ms: int
    labels: dict[str, str] | None


@dataclass
class Guest:
    """One actor's host-side state in the kit, and its WIT answers."""

    world: World
    cls: str
    id: str
    path: Path
    wit: dict[str, ModuleType]
    err: type[Exception]
    alarm: int | None = None
    alarm_retries: int = 0  # on_alarm events that failed in a row (the host's count)
    actor: Any = None  # the wkguest Actor object its instance keeps (local.py swaps it)
    sdk_state: list[Any] | None = None  # its share of the SDK's module state (local.py)
    error_result: str = ""  # its last on_init's or on_alarm's error result
    trap: Trap | None = None
    published: Published | None = None
    logs: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)
    metrics: list[str] = field(default_factory=list)
    # One event's own: reset by begin()
    alarm_touched: bool = False
    delete_requested: bool = False
    trap_read: bool = False
    reported: GuestException | None = None
    call_error: tuple[str, str] | None = None
    fetch_error: tuple[str, str] | None = None
    # WIT overlap: the requests started, each answered at its start (nothing here runs
    # beside the guest), until wait-any gives them
    started: dict[int, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.sql = GuestSql(self.path, self.wit["sqlite"], self.err)
        self.answers = self._answers()  # each WIT call looks its answer up here

    def begin(self) -> None:
        self.alarm_touched = self.delete_requested = self.trap_read = False
        self.reported = None
        self.call_error = self.fetch_error = None
        self.started.clear()

    def end(self, trapped: Trap | None) -> None:
        """The event ended (`trapped`: why it trapped): the host's rules at its end."""
        self.sql.end_event()
        if trapped is not None:
            if trapped.kind == "GUEST" and self.reported is not None:
                trapped = Trap("GUEST", raised(self.reported), self.reported)
            self.trap = trapped
        elif self.trap_read:
            self.trap = None

    # -- the answers, by interface -----------------------------------------------------
    def _answers(self) -> dict[str, dict[str, Callable[..., Any]]]:
        w = self.wit
        return {
            "sqlite": self.sql.answers(),
            "alarm": {"set": self._alarm_set, "get": lambda: self.alarm,
                      "clear": lambda: self._alarm_set(None)},
            "actors": {"call": self._call, "last_error": lambda: _error(
                w["actors"].CallError, w["actors"].CallErrorKind, self.call_error)},
            "http": {"fetch": self._fetch, "last_error": lambda: _error(
                w["http"].FetchError, w["http"].FetchErrorKind, self.fetch_error)},
            "lifecycle": {
                "self_ref": lambda: w["types"].ActorRef(class_=self.cls, id=self.id),
                "now": self.world.now, "delete_self": self._delete_self,
                "last_trap": self._last_trap, "last_trap_info": self._last_trap_info,
                "report_exception": self._report, "fuel_used": lambda: 0,
                "now_and_fuel": lambda: (self.world.now(), 0), "holder": lambda: HOLDER,
                "narrow_deadline": lambda within_ms: None, "read_only": self._read_only},
            "attributes": {"publish": self._publish},
            "log": {"write": lambda level, message, fields: self.logs.append(
                (level.name.lower(), message, dict(fields)))},
            "overlap": {"start_fetch": self._start_fetch, "start_call": self._start_call,
                        "wait_any": self._wait_any},
            "metrics": {"submit": self.metrics.append},
            "trace": {"current": lambda: "", "begin": lambda name, parent, attrs: 0,
                      "end": lambda span, attrs, error: None},
        }

    def _alarm_set(self, at_ms: int | None) -> None:
        self.alarm, self.alarm_touched = at_ms, True

    def _delete_self(self) -> None:
        if self.sql.read_only:
            return  # the host ignores it too: a read-only event changes nothing
        self.delete_requested = True

    def _read_only(self) -> None:
        self.sql.read_only = True

    def _last_trap(self) -> str | None:
        self.trap_read = True
        return None if self.trap is None else self.trap.message

    def _last_trap_info(self) -> Any:
        self.trap_read = True
        if self.trap is None:
            return None
        life = self.wit["lifecycle"]
        e = self.trap.exception
        exc = None if e is None else life.GuestException(e.type_name, e.message, e.traceback)
        return life.TrapInfo(life.TrapKind[self.trap.kind], self.trap.message, exc)

    def _report(self, type_name: str, message: str, traceback: str) -> None:
        self.reported = GuestException.bounded(type_name, message, traceback)

    def _publish(self, status: str, updated_ms: int,
                 labels: list[tuple[str, str]] | None) -> None:
        self.published = Published(status, updated_ms, None if labels is None
                                   else dict(labels))

    def _call(self, target: Any, req: Any) -> Any:
        types = self.wit["types"]
        try:
            r = self.world.call_from(self, target.class_, target.id, req.method, req.path,
                                     req.query, list(req.headers), from_wire(req.body))
        except CallFailed as e:
            self.call_error = (e.kind, f"{e.kind.lower().replace('_', '-')}: {e}")
            raise self.err(self.call_error[1]) from None
        return types.Response(status=r.status, headers=list(r.headers),
                              body=to_wire(r.body))

    def _fetch(self, req: Any) -> Any:
        http = self.wit["http"]
        if self.sql.read_only:
            self.fetch_error = ("DENIED", "denied: a read-only event fetches nothing")
            raise self.err(self.fetch_error[1])
        asked = Fetch(req.method, req.url, list(req.headers), from_wire(req.body),
                      req.timeout_ms)
        try:
            r = self.world.fetch(self, asked)
        except CallFailed as e:
            self.fetch_error = (e.kind, f"{e.kind.lower().replace('_', '-')}: {e}")
            raise self.err(self.fetch_error[1]) from None
        return http.HttpResponse(status=r.status, headers=list(r.headers),
                                 body=to_wire(r.body))


    # -- overlap: each request answered as it starts, kept until wait-any gives it -----
    def _start(self, answer: Callable[[], Any], case: str, failed_case: str,
               failed_kinds: Any, error_record: type) -> int:
        o = self.wit["overlap"]
        try:
            ended = getattr(o, f"Ended_{case}")(answer())
        except self.err:
            failed = self.fetch_error if case == "Fetched" else self.call_error
            assert failed is not None  # each raise of self.err above notes it first
            kind, message = failed
            ended = getattr(o, f"Ended_{failed_case}")(
                error_record(kind=failed_kinds[kind], message=message))
        handle = next(_HANDLES)  # never reused, as the host's (interfaces/overlap.py)
        self.started[handle] = ended
        return handle

    def _start_fetch(self, req: Any) -> int:
        http = self.wit["http"]
        return self._start(lambda: self._fetch(req), "Fetched", "FetchFailed",
                           http.FetchErrorKind, http.FetchError)

    def _start_call(self, target: Any, req: Any, timeout_ms: int | None) -> int:
        actors = self.wit["actors"]
        return self._start(lambda: self._call(target, req), "Called", "CallFailed",
                           actors.CallErrorKind, actors.CallError)

    def _wait_any(self, timeout_ms: int | None) -> Any:
        if not self.started:
            raise self.err("invalid: the event has no request in flight")
        first = min(self.started)  # in the order they started: each ended as it started
        return first, self.started.pop(first)


_HANDLES = itertools.count(1)


def _error(record: type, kinds: Any, failed: tuple[str, str] | None) -> Any:
    return None if failed is None else record(kind=kinds[failed[0]], message=failed[1])
