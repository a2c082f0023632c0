"""The kit's in-process host: users' app modules on plain CPython, no build.

`Local` keeps the actors of the classes a test serves (guest.py: each its own SQLite
file under the test's directory), runs one event at a time as the host does (on_init
first for a new actor, then on_alarm or handle, through the app's exported `Handler`),
and a clock that moves only when the test says so. Host rules it keeps: a call from
one actor's event runs the callee's event nested, and is refused into an actor already
in an event (re-entry), into a class not served, and when the callee traps; an
uncaught exception traps the event (the caller gets 500; what it opened rolls back; the
actor's object goes, as its instance would); an on_alarm that traps or fails without
setting the alarm is retried after the host's growing delay (1 s, 2 s, 4 s, ... up to 5
minutes); a new actor whose on_init fails is not created.
"""

from __future__ import annotations

import importlib
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wkguest.codec import from_wire, to_wire
from wkguest.types import Response

from ..config import HostConfig
from ..engine.guest_sources import app_sources
from ..storage.host_rows import retry_delay_ms
from . import bindings
from .apps import handler_of, load_app
from .fetch_server import Fetches, FetchHandler
from .guest import CallFailed, Fetch, Guest, Trap

START_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z: far from 0, so off-by-epoch bugs show
# An alarm whose event trapped or failed runs again later, as the host's (its defaults).
RETRY_BASE_MS, RETRY_MAX_MS = HostConfig.alarm_retry_base_ms, HostConfig.alarm_retry_max_ms
_current: list[Guest] = []  # the actors in an event now, innermost last


def _answer(iface: str, fn: str) -> Callable[..., Any]:
    def forward(*args: Any) -> Any:
        if not _current:
            raise RuntimeError(f"{iface}.{fn} was called outside an event: wkguest's host "
                               "functions work only while the kit runs one")
        return _current[-1].answers[iface][fn](*args)

    forward.__name__ = fn
    return forward


class _Trapped(Exception):
    """The actor trapped, or was not created: the front door's 500, a caller's error."""


@dataclass
class Served:
    handler: type[Any]
    internal: bool
    protocols: frozenset[str]  # those its app declares, as a build finds them


class Local:
    """Actors on plain CPython (see the module's doc)."""

    def __init__(self, root: Path, start_ms: int = START_MS) -> None:
        self.wit = bindings.install(_answer)
        from componentize_py_types import Err

        self.err: type[Exception] = Err
        self.root = root
        self.now_ms = start_ms
        self.classes: dict[str, Served] = {}
        self.guests: dict[tuple[str, str], Guest] = {}
        self.fetches = Fetches()
        self.traps: list[tuple[str, str, str]] = []  # (class, id, reason) of each trap
        self._made = 0  # actors made: each its own database file
        self._state = [(importlib.import_module(m), n, f) for m, n, f in _instance_state()]

    # -- set-up --------------------------------------------------------------------
    def serve(self, cls: str, app: str | Path, internal: bool = False) -> None:
        self.classes[cls] = Served(handler_of(load_app(app), str(app)), internal,
                                   app_sources(Path(app), []).protocols)

    def start(self) -> None:
        """Nothing to start: the actors run in this process."""

    def on_fetch(self, prefix: str, handler: FetchHandler) -> None:
        self.fetches.handlers.append((prefix, handler))

    def now(self) -> int:
        return self.now_ms

    def skip_to(self, ms: int) -> None:
        self.now_ms = max(self.now_ms, ms)

    def sql(self, cls: str, id: str, query: str, params: tuple[Any, ...]
            ) -> list[tuple[Any, ...]]:
        guest = self.guests.get((cls, id))
        if guest is None:
            raise KeyError(f"no actor {cls}/{id} (never created, or it deleted itself)")
        return guest.sql.db.host_exec(query, params)

    # -- requests --------------------------------------------------------------------
    def request(self, cls: str, id: str, method: str, path: str, body: bytes = b"",
                sender: str = "operator", query: str = "") -> Response:
        """A request from outside (`sender` "public" or "operator"), as the front door
        passes it on."""
        served = self.classes.get(cls)
        if served is None:
            return Response.text(f"no class {cls!r} is served", status=404)
        if served.internal and sender == "public":
            return Response.text(f"class {cls!r} is internal: only actors and operators "
                                 "call it", status=403)
        types = self.wit["types"]
        who = types.Sender_Operator() if sender == "operator" else types.Sender_Public()
        try:
            return self._handle(cls, id, method, path, query, [], body, who)
        except _Trapped as e:
            return Response.text(str(e), status=500)

    def call_from(self, caller: Guest, cls: str, id: str, method: str, path: str,
                  query: str, headers: list[tuple[str, str]], body: bytes) -> Response:
        route = f"{caller.cls}/{caller.id} -> {cls}/{id}"
        if cls not in self.classes:
            raise CallFailed("UNKNOWN_CLASS", f"no class {cls!r} is served")
        if any((g.cls, g.id) == (cls, id) for g in _current):
            raise CallFailed("REFUSED", f"re-entrant call refused: {route}")
        asked = next((v.strip() for k, v in headers if k.lower() == "wk-protocol"), None)
        if asked is not None and asked not in self.classes[cls].protocols:
            raise CallFailed("NOT_DECLARED", f"class {cls!r} does not declare the protocol "
                             f"{asked!r}; nothing was run")
        types = self.wit["types"]
        sender = types.Sender_Actor(types.ActorRef(class_=caller.cls, id=caller.id))
        try:
            return self._handle(cls, id, method, path, query, headers, body, sender)
        except _Trapped as e:
            raise CallFailed("CALLEE_TRAPPED", f"{e} ({route})") from None

    def fetch(self, caller: Guest, req: Fetch) -> Response:
        return self.fetches.answer(req)

    def seed(self, cls: str, id: str, tables: list[tuple[str, list[dict[str, Any]]]],
             after: str = "") -> None:
        """Make actor `cls`/`id` (its on_init run) and put rows into its tables, then run
        `after` (a script): a recorded history's instance, as histories.py replays it."""
        guest = self.guests.get((cls, id)) or self._create(cls, id)
        db = guest.sql.db  # as the guest's own SQL: the host's may not touch its tables
        for table, rows in tables:
            for row in rows:
                db.guest_exec(f"INSERT INTO {table} ({', '.join(row)}) VALUES "
                              f"({', '.join('?' for _ in row)})", list(row.values()), False)
        if after:
            db.guest_exec(after, [], False)
        guest.sql.end_event()

    # -- alarms and time ----------------------------------------------------------------
    def next_alarm(self) -> int | None:
        times = [g.alarm for g in self.guests.values() if g.alarm is not None]
        return min(times) if times else None

    def run_due(self, limit: int = 10_000) -> int:
        """Fire due alarms, earliest first, until none is due; how many fired."""
        for fired in range(limit):
            due = [(g.alarm, k) for k, g in self.guests.items()
                   if g.alarm is not None and g.alarm <= self.now_ms]
            if not due:
                return fired
            self.fire(*min(due)[1])
        raise RuntimeError(f"alarms still due after {limit} events: does a run never wait?")

    def fire(self, cls: str, id: str) -> bool:
        """Run the actor's on_alarm now, due or not: False if it trapped or failed."""
        return self._event(self.guests[(cls, id)], lambda h: h.on_alarm(), alarm=True)

    # -- events ------------------------------------------------------------------------
    def _handle(self, cls: str, id: str, method: str, path: str, query: str,
                headers: list[tuple[str, str]], body: bytes, sender: Any) -> Response:
        """The actor's answer. Raises _Trapped if it was not created or trapped."""
        guest = self.guests.get((cls, id)) or self._create(cls, id)
        req = self.wit["types"].Request(method=method, path=path, query=query,
                                        headers=list(headers), body=to_wire(body))
        out: list[Any] = []
        if not self._event(guest, lambda h: out.append(h.handle(req, sender))):
            raise _Trapped(f"the actor trapped: {guest.trap.message if guest.trap else ''}")
        r = out[0]
        return Response(int(r.status), list(r.headers), from_wire(r.body))

    def _create(self, cls: str, id: str) -> Guest:
        """A new actor, its on_init run. Raises _Trapped if on_init failed."""
        folder = self.root / cls
        folder.mkdir(parents=True, exist_ok=True)
        self._made += 1
        guest = Guest(self, cls, id, folder / f"{self._made}.db", self.wit, self.err)
        self.guests[(cls, id)] = guest
        if self._event(guest, lambda h: h.on_init()):
            return guest
        self._drop(guest)
        why = guest.trap.message if guest.trap else guest.error_result
        raise _Trapped(f"the actor was not created: {why}")

    def _event(self, guest: Guest, call: Callable[[Any], Any], alarm: bool = False) -> bool:
        """One event of `guest`: True if it ended without a trap or an error result."""
        handler_cls = self.classes[guest.cls].handler
        holder = getattr(handler_cls, "wk_actor_holder", None)
        outer = self._swap_in(guest, holder)
        guest.begin()
        _current.append(guest)
        trap: Trap | None = None
        ok = True
        try:
            call(handler_cls())
        except self.err as e:  # on_init's or on_alarm's error result: not a trap
            ok, guest.error_result = False, str(getattr(e, "value", e))
        except KeyboardInterrupt:
            raise
        except BaseException as e:  # anything else uncaught traps, as in a component
            ok, trap = False, Trap("GUEST", f"guest trapped: {type(e).__name__}: {e}")
        finally:
            _current.pop()
            guest.end(trap)
            self._swap_out(guest, holder, outer)
        if trap is not None:
            self.traps.append((guest.cls, guest.id, guest.trap.message if guest.trap else ""))
            guest.actor = None  # its instance is dropped: the next event starts anew
        if alarm and not guest.alarm_touched:  # the event's own choice wins
            guest.alarm_retries = 0 if ok else guest.alarm_retries + 1
            guest.alarm = None if ok else self.now_ms + retry_delay_ms(
                guest.alarm_retries - 1, RETRY_BASE_MS, RETRY_MAX_MS)
        elif alarm:
            guest.alarm_retries = 0
        if ok and guest.delete_requested:
            self._drop(guest)
        return ok

    def _swap_in(self, guest: Guest, holder: list[Any] | None) -> list[Any]:
        """Put `guest`'s share of the SDK's module state in place; the outer's back."""
        outer = [getattr(mod, name) for mod, name, _ in self._state]
        mine = getattr(guest, "sdk_state", None) or [fresh() for _, _, fresh in self._state]
        for (mod, name, _), v in zip(self._state, mine, strict=True):
            setattr(mod, name, v)
        if holder is not None:
            outer.append(list(holder))
            holder[:] = [] if guest.actor is None else [guest.actor]
        return outer

    def _swap_out(self, guest: Guest, holder: list[Any] | None, outer: list[Any]) -> None:
        guest.sdk_state = [getattr(mod, name) for mod, name, _ in self._state]
        for (mod, name, _), v in zip(self._state, outer, strict=False):
            setattr(mod, name, v)
        if holder is not None:
            guest.actor = holder[0] if holder else None
            holder[:] = outer[-1]

    def _drop(self, guest: Guest) -> None:
        self.guests.pop((guest.cls, guest.id), None)
        guest.sql.close()
        for f in guest.path.parent.glob(guest.path.name + "*"):
            f.unlink()

    def close(self) -> None:
        for guest in list(self.guests.values()):
            guest.sql.close()
        self.guests.clear()
        shutil.rmtree(self.root, ignore_errors=True)


def _instance_state() -> tuple[tuple[str, str, Callable[[], Any]], ...]:
    from wkguest.actor import INSTANCE_STATE

    return INSTANCE_STATE
