"""The start route of wk-workflow/v1 (protocol.py dispatches to it): create the
instance, or answer for the one there.

A start may carry `parent: {cls, id}` and `detached` (children/calls.py): the new
instance records its parent (children/registry.py), and the answer for an existing one
says whose child it is (`parent`) and, if the input differs, the instance's (`input`),
so the parent can name both. Its `labels` are the new instance's (core/labels.py). Its
`event: {name, payload}` is delivered whether it creates the instance or finds it
(signal-with-start: with_start.py); so is its `update: {name, arg, id?}`
(update-with-start: update_route.py accepts it, in the creation's transaction when the
start creates the instance), and the answer, which then says how the update stands
(`update`), is held until the update ends.

Runs happen in on_alarm, with one exception: an operator's start that waits (`wait_ms`)
runs the new instance's first run in its own event (`_create_and_run`).
"""

from __future__ import annotations

import json
from typing import Any

from . import debounce, start_keys, update_route, with_start
from .children.registry import Registry
from .core import counted, spans
from .core.instance import StatusRow
from .core.labels import start_field
from .core.requests import BadRequest, int_field
from .core.values import decode, encode
from .errors import StoreFault, UnsupportedValue, ValueTooLarge
from .routes import Reply, encode_field, held, reply, status_map
from .runner import Runner
from .updates import inbox

# The hold state of a start delivered again after its hold (HOLD_STATE): the first
# delivery created the instance, or delivered its event to the one it found.
_CREATED, _DELIVERED = "created", "delivered"


class StartRoute:
    """The start route over one instance's runner."""

    def __init__(self, runner: Runner) -> None:
        self.runner = runner
        self.store = runner.store
        self.db = runner.db

    def answer(self, msg: dict[str, Any], row: StatusRow | None, sender: str,
               hold_state: str | None, key_header: str | None = None) -> Reply:
        """The start route's answer (see the module's doc). `key_header`: the request's
        Idempotency-Key (start_keys.py)."""
        parent, ev = _parent_field(msg), with_start.event_field(msg)
        up = _update_field(msg, ev is not None)
        key, window = start_keys.key_of(msg, key_header), debounce.window_of(msg)
        if window is not None and (ev is not None or up is not None or parent is not None):
            raise BadRequest(400, "bad-request", "a debounced start carries no event, "
                             "update or parent")
        if up is not None:
            return self._with_update(msg, row, up, hold_state)
        if row is not None and window is not None and hold_state is None:
            moved = self._debounce_again(msg, row, window)
            if moved is not None:
                return moved
        if row is not None:
            return self._found(msg, row, parent is not None, ev, hold_state, key)
        if key is not None:  # before the create: its durable write syncs it too
            start_keys.keep(self.db, key, True, self.db.now())
        return self._new(msg, sender, parent, ev, window)

    def _new(self, msg: dict[str, Any], sender: str, parent: tuple[str, str] | None,
             ev: dict[str, Any] | None, window: int | None) -> Reply:
        """Create the instance: with its event (signal-with-start), held back (debounce),
        run at once (an operator's start that waits), or as it is."""
        wait_ms = int_field(msg, "wait_ms", 0)  # refused before anything is recorded
        text, tagged = encode_field(msg.get("input"), self.runner.config.max_value_bytes,
                                    "the input")
        labels = start_field(msg)
        if parent is not None:  # before the create: its durable insert syncs it too
            Registry(self.db).set_parent(*parent, msg.get("detached") is True)
        self.store.publish.start_labels(labels)  # so are they; its publish carries them
        now = self.db.now()
        run_id = self.runner.new_run_id()
        answer: dict[str, Any] = {"created": True}
        if ev is not None:  # one transaction with its event
            created = with_start.create_with(
                self.runner, ev, lambda: self._create(run_id, text, tagged, now))
        elif window is not None:
            created = debounce.create(self.runner, lambda: self._create(
                run_id, text, tagged, now), window)
            answer["debounced_until"] = created and created.wake_at
        elif wait_ms > 0 and sender == "operator":
            created = self._create_and_run(run_id, text, tagged, now)
        else:
            created = self._create(run_id, text, tagged, now)
        if created is None:
            raise StoreFault("the new instance is not there after its insert")
        return held(msg, created, {**status_map(self.runner, created), **answer}, _CREATED)

    def _debounce_again(self, msg: dict[str, Any], row: StatusRow, window: int
                        ) -> Reply | None:
        """A debounced start of a debouncing instance: its new input and window's end;
        None if it is not debouncing (answered as any start that found it)."""
        text, tagged = encode_field(msg.get("input"), self.runner.config.max_value_bytes,
                                    "the input")
        until = debounce.replace(self.runner, text, tagged, window)
        if until is None:
            return None
        row = self.store.status() or row
        return reply({**status_map(self.runner, row), "created": False,
                      "debounced_until": until})

    def _found(self, msg: dict[str, Any], row: StatusRow, parent: bool,
               ev: dict[str, Any] | None, hold_state: str | None, key: str | None) -> Reply:
        """The answer for the instance the start found (the event delivered, if any)."""
        # Delivered again after a hold: the first delivery's answer said created.
        created_here = hold_state == _CREATED
        was = None if key is None or hold_state else start_keys.seen(self.db, key)
        if was is not None:  # a start this instance took, sent again: answered as it was
            created_here, ev = was, None
        elif ev is not None and hold_state is None:  # signal-with-start (with_start.py)
            refused = with_start.deliver_to(self.runner, ev, row, key)
            if refused is not None:
                return refused
            row = self.store.status() or row
        elif key is not None and hold_state is None:
            start_keys.keep(self.db, key, False, self.db.now())
        answer = {**status_map(self.runner, row), "created": created_here}
        if not created_here and "input" in msg:
            # The instance stays as it is; the caller learns its input was ignored.
            answer["input_differs"] = self._input_differs(msg["input"])
        if parent:  # a parent's start: whose child this one is
            self._parent_answer(answer)
        return held(msg, row, answer, _CREATED if created_here else
                    _DELIVERED if ev is not None else None)

    def _with_update(self, msg: dict[str, Any], row: StatusRow | None, up: dict[str, Any],
                     hold_state: str | None) -> Reply:
        """Update-with-start: the instance created with the update accepted in the same
        transaction, or the update delivered to the instance found; the start's answer
        with the update's (`update`), held until it ends. The hold state is the first
        delivery's "created ID" or "found ID"."""
        how, _, held_id = (hold_state or "").partition(" ")
        if row is None:
            text, tagged = encode_field(msg.get("input"), self.runner.config.max_value_bytes,
                                        "the input")
            if _parent_field(msg) is not None:
                raise BadRequest(400, "bad-request", "a child's start carries no update")
            self.store.publish.start_labels(start_field(msg))
            run_id, now = self.runner.new_run_id(), self.db.now()
            u = update_route.deliver(self.runner, up, None, create=lambda: self._create(
                run_id, text, tagged, now))
            how, row = _CREATED, self.store.status()
            if row is None:
                raise StoreFault("the new instance is not there after its insert")
        else:
            u = update_route.deliver(self.runner, up, row, held_id or None)
            how = how or "found"
        m = update_route.shown(u, row)
        answer = {**status_map(self.runner, row), "created": how == _CREATED, "update": m}
        return reply(answer) if m["state"] in inbox.DONE else held(
            msg, row, answer, f"{how} {u.id}")

    def _parent_answer(self, answer: dict[str, Any]) -> None:
        got = Registry(self.db).parent()
        answer["parent"] = None if got is None else {"cls": got[0], "id": got[1]}
        if answer.get("input_differs"):
            stored = self.store.input()
            answer["input"] = None if stored is None else decode(*stored)

    def _input_differs(self, given: Any) -> bool:
        """Whether `given` is another value than the instance's input: compared as JSON
        with sorted keys, so that a map's order is no difference (a value the limit or
        the types refuse is one)."""
        try:
            text, tagged = encode(given, self.runner.config.max_value_bytes, "the input")
        except (ValueTooLarge, UnsupportedValue):
            return True
        stored = self.store.input()
        return stored is None or (tagged, _sorted(text)) != (stored[1], _sorted(stored[0]))

    def _create(self, run_id: str, text: str, tagged: bool, now: int) -> StatusRow | None:
        """Record the instance, durably, with its alarm to now: its runs come from there."""
        self.db.alarm_set(now)  # first: the durable insert below syncs it too
        if not self.store.create(run_id, text, tagged, now):
            return self.store.status()
        counted.started(self.db)
        spans.run_began(self.db, self.store, run_id)
        # What status() would read back: the row just inserted, in an actor with no
        # steps or events yet (an id without an instance row never keeps any).
        return StatusRow(state="running", run_id=run_id, wake_at=None, waiting_for=None,
                         output=None, output_tagged=False, error=None, created_at=now,
                         updated_at=now, finished_at=None, positions=0, events_pending=0)

    def _create_and_run(self, run_id: str, text: str, tagged: bool, now: int
                        ) -> StatusRow | None:
        """Record the instance and run its first run now, in the start's event, as its
        alarm would (Runner.create_and_run). Returns its status after that run.

        Only for an operator's start that waits for the end (`wait_ms`). Its client waits
        anyway, and it comes from outside, so no actor's call chain is held up and a step
        may call back any actor. It saves the alarm's event and the answer's delivery
        again, and the create's fsync: the run's own durable write (a step's outcome, the
        finish, a sleep's wake time) syncs the creation with it. A run that synced nothing
        (a bad run, say) syncs here, before the answer says "created". Should the event
        fail instead (a trap, a cut), the client gets the host's error, and the watchdog
        alarm set before the insert runs the instance again."""
        syncs = self.store.syncs
        if not self.runner.create_and_run(run_id, text, tagged, now):
            return self.store.status()
        if self.store.syncs == syncs:
            self.store.sync()
        return self._finished_first(run_id, now) or self.store.status()

    def _finished_first(self, run_id: str, created_at: int) -> StatusRow | None:
        """What status() would read of an instance that its first run has just finished,
        known without the query: the finish's values; every position that run took is
        final, in its journal; and no event can have come (its actor is busy in this
        event). None if the run did not finish it, or its storage failed."""
        fin, journal = self.runner.settle.finished_as, self.runner.journal
        if fin is None or journal is None or self.runner.store_fault is not None:
            return None
        state, output, tagged, error, at = fin
        return StatusRow(state=state, run_id=run_id, wake_at=None, waiting_for=None,
                         output=output, output_tagged=tagged, error=error,
                         created_at=created_at, updated_at=at, finished_at=at,
                         positions=len(journal), events_pending=0)


def _parent_field(msg: dict[str, Any]) -> tuple[str, str] | None:
    """A start's `parent: {cls, id}` (a child workflow's start), or None."""
    p = msg.get("parent")
    if p is None:
        return None
    if not (isinstance(p, dict) and isinstance(p.get("cls"), str) and p["cls"]
            and isinstance(p.get("id"), str) and p["id"]):
        raise BadRequest(400, "bad-request", "'parent' must be a map of non-empty texts "
                         "cls and id")
    if not isinstance(msg.get("detached", False), bool):
        raise BadRequest(400, "bad-request", "'detached' must be true or false")
    return p["cls"], p["id"]


def _update_field(msg: dict[str, Any], has_event: bool) -> dict[str, Any] | None:
    """A start's `update: {name, arg, id?}` (update-with-start), or None."""
    up = msg.get("update")
    if up is None:
        return None
    if has_event:
        raise BadRequest(400, "bad-request", "a start carries an event or an update, not both")
    if not isinstance(up, dict):
        raise BadRequest(400, "bad-request", "'update' must be a map {name, arg, id?}")
    return {k: up[k] for k in ("name", "arg", "id") if k in up}


def _sorted(text: str) -> str:
    return json.dumps(json.loads(text), sort_keys=True, ensure_ascii=False)


