"""`wf.on_update(name, handler, validator=None)`, and how a run takes updates.

An update is a message that changes a running instance and answers once the workflow
has applied it (Temporal's updates). The update route (update_route.py) accepts it only if the
instance's code, replayed dry to where the instance is, registers a handler of that name
and its validator lets it through; it then waits in the inbox (inbox.py).

A run takes it at the first position past its journal where a handler of that name is
registered: before the next step, or while the function sleeps or waits (a sleep's or
a wait's pending entry is displaced, with its time, and put back after the handler,
pending again: its time runs on as before). Not while a step retries, a group is open or
an update's own handler runs: there it waits until that position ends. The handler
runs there and then, inline: the function goes on once it returns.

    A  at p       [id, arg, tagged, displaced]    the update taken: its handler begins
    ...           the handler's own positions (steps, sleeps, children, ...)
    D  at q       [id, ok, value or error, tagged] its handler ended

A replay reaches p from whatever primitive the function called there, and runs the
handler again over the recorded positions: the state it changed is rebuilt as it was.
The handler's answer, or its exception (as "Type: message"), is the update's outcome;
it fails the update, not the workflow. A signal (a suspension, a mistake in the code)
stops the run as anywhere else, and continue-as-new inside a handler is such a mistake.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, NamedTuple

from ..core import counted
from ..core.cursor import Cursor
from ..core.explain import describe
from ..core.frontier import Frontier
from ..core.kinds import SLEEPING, UPDATE, UPDATE_APPLIED, UPDATE_DONE, WAITING, Pending
from ..core.values import check_name, decode, encode, revive
from ..errors import (
    ContinueAsNew,
    Reordered,
    UnsupportedValue,
    ValueTooLarge,
    WorkflowSignal,
)
from . import inbox

Handler = Callable[[Any], Any]
Validator = Callable[[Any], Any]
_DISPLACEABLE = (SLEEPING, WAITING)


class Registered(NamedTuple):
    handler: Handler
    validator: Validator | None


class Taking:
    """The cursor's updates hook (core/cursor.py's `Updates`), made when the function
    registers its first handler."""

    __slots__ = ("handlers", "waiting", "_inside", "_inbox")

    def __init__(self, waiting: int) -> None:
        self.handlers: dict[str, Registered] = {}
        self.waiting = waiting  # in the inbox, as the run's load counted them
        self._inside = False  # a handler runs: its positions take no update
        self._inbox: list[inbox.Waiting] | None = None  # read at the first take

    def before(self, run: Cursor, pos: int) -> int:
        if self._inside:
            return pos
        while True:
            if run.recorded(pos):
                if run.kind_at(pos) != UPDATE_APPLIED:
                    return pos
                pos = self._replay(run, pos)
            elif not self.waiting:
                return pos
            else:
                taken = self._take(run, pos)
                if taken is None:
                    return pos
                pos = taken

    def _replay(self, run: Cursor, pos: int) -> int:
        name = run.entry(pos)[1]
        id, arg, tagged, displaced = run.replay(pos, UPDATE, name)
        got = self.handlers.get(name)
        if got is None:
            run.stop(Reordered(
                f"position {pos} took update {name!r}, and the code registers no handler "
                f"of that name there now (wf.on_update): running instances need it"))
        outcome = self._handle(run, name, got.handler, revive(arg) if tagged else arg)
        return self._end(run, id, name, outcome, displaced)

    def _take(self, run: Cursor, pos: int) -> int | None:
        """Take the oldest waiting update whose handler is registered, at new position
        `pos`: the position after its end. None: none may be taken here."""
        front = run.frontier
        p = front.pending if front.pending is not None and front.pending.pos == pos else None
        if front.refusal is not None or (p is not None and p.kind not in _DISPLACEABLE):
            return None
        w = self._next(front)
        if w is None:
            return None
        displaced = None if p is None else [p.kind, p.name, p.wake_at]
        entry = (f"[{json.dumps(w.id)},{w.arg},{'true' if w.arg_tagged else 'false'},"
                 f"{json.dumps(displaced)}]")
        run.new(pos, lambda: _record_take(front, w, run.run_id, pos, entry,
                                          displaced is not None))
        assert self._inbox is not None
        self._inbox.remove(w)
        self.waiting -= 1
        outcome = self._handle(run, w.name, self.handlers[w.name].handler,
                               decode(w.arg, w.arg_tagged))
        return self._end(run, w.id, w.name, outcome, displaced)

    def _next(self, front: Frontier) -> inbox.Waiting | None:
        if self._inbox is None:
            self._inbox = inbox.waiting(front.db)
            self.waiting = len(self._inbox)
        return next((w for w in self._inbox if w.name in self.handlers), None)

    def _handle(self, run: Cursor, name: str, handler: Handler, arg: Any
                ) -> tuple[bool, Any, str | None]:
        """Run `handler(arg)`: (ok, its answer, the error it raised)."""
        self._inside = True
        try:
            return True, handler(arg), None
        except ContinueAsNew:
            run.refuse(f"update {name!r}: its handler called wf.continue_as_new (a run "
                       "may continue as new only from the workflow function itself)")
        except WorkflowSignal:
            raise
        except Exception as e:
            return False, None, describe(e)
        finally:
            self._inside = False

    def _end(self, run: Cursor, id: str, name: str, outcome: tuple[bool, Any, str | None],
             displaced: list[Any] | None) -> int:
        """The handler returned or raised: its end at the next position, recorded or
        replayed. The position after it."""
        q = run.position
        if run.recorded(q):
            if run.kind_at(q) != UPDATE_DONE:
                run.stop(Reordered(
                    f"position {q} was recorded as {run.entry(q)[1]!r}, where the handler "
                    f"of update {name!r} ended: the handler's code changed its steps"))
            run.replay(q, UPDATE, name)
            return q + 1
        front = run.frontier
        entry, row = _outcome(id, outcome, front.limit, name)
        back = None if displaced is None else (q + 1, *displaced)
        run.new(q, lambda: _record_end(front, id, name, q, entry, row, back))
        return q + 1


def on_update(run: Cursor, name: str, handler: Handler, validator: Validator | None) -> None:
    """Register `handler(arg)` for updates `name`, and `validator(arg)` to refuse them
    before they are accepted (see the module's doc). Takes no position.

    Raises CodeError for a bad name, or a handler or validator that is not callable."""
    run.at()
    try:
        check_name(name, "update")
        for what, f in (("handler", handler), ("validator", validator)):
            if f is not None and not callable(f):
                raise TypeError(f"the {what} must be callable, not {f!r}")
        if handler is None:
            raise TypeError("the handler must be callable, not None")
    except (TypeError, ValueError) as e:
        run.refuse(f"wf.on_update({name!r}): {e}")
    hook = run.updates
    if not isinstance(hook, Taking):
        hook = run.updates = Taking(run.frontier.updates_waiting)
    hook.handlers[name] = Registered(handler, validator)


def handlers_of(run: Cursor) -> dict[str, Registered]:
    """The handlers `run`'s function registered (a dry replay's: update_route.py)."""
    hook = run.updates
    return hook.handlers if isinstance(hook, Taking) else {}


def _outcome(id: str, outcome: tuple[bool, Any, str | None], limit: int, name: str
             ) -> tuple[str, inbox.Outcome]:
    """The end's journal entry and the update row's outcome. An answer that cannot be
    recorded fails the update, saying why."""
    ok, value, error = outcome
    if ok:
        try:
            text, tagged = encode(value, limit, f"the answer of update {name!r}")
        except (UnsupportedValue, ValueTooLarge) as e:
            ok, error = False, str(e)
        else:
            flag = "true" if tagged else "false"
            return f"[{json.dumps(id)},true,{text},{flag}]", (text, tagged, None)
    return json.dumps([id, False, error, False]), (None, False, error)


def _record_take(front: Frontier, w: inbox.Waiting, run_id: str, pos: int, entry: str,
                 displaced: bool) -> None:
    front.open(pos)
    inbox.take(front.db, w, run_id, pos, entry, front.db.now(), displaced)
    front.unsynced = True
    front.journal.append(UPDATE_APPLIED, w.name, entry, json.loads(entry))
    if displaced:
        front.pending = None


def _record_end(front: Frontier, id: str, name: str, pos: int, entry: str,
                row: inbox.Outcome, back: inbox.Displaced | None) -> None:
    front.open(pos)
    inbox.end(front.db, id, name, pos, entry, row, front.db.now(), back)
    counted.update(front.db, "failed" if row[2] is not None else "completed")
    front.unsynced = True
    front.journal.append(UPDATE_DONE, name, entry, json.loads(entry))
    if back is not None:
        at, kind, what, wake = back
        front.pending = Pending(at, kind, what, 0, None, wake, None)
