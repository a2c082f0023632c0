"""`Client`: start and follow instances of a workflow class from any actor.

    orders = workflow.Client("orders")          # at module level (see below)

    status = orders.start("order-42", {"item": "book"})   # idempotent while kept
    orders.send_event("order-42", "approved", {"by": "ann"})
    status = orders.status("order-42")
    orders.cancel("order-42")                    # or compensate=True: undo its steps first
    events = orders.events("order-42", after=0)  # what it emitted (wf.emit), from offset 0
    progress = orders.query("order-42", "progress")  # a query handler's answer (wf.query)
    u = orders.update("order-42", "add_item", {"sku": "b-7"})  # wf.on_update's handler
    u = orders.update_status("order-42", u.id)   # later: u.value() once it has ended
    orders.pause("order-42"); orders.resume("order-42")  # and terminate, rescue, restart

Every call is one `actors.call` to the instance that only records or reads, so it
returns quickly; the instance runs in its own event afterwards, never inside this call.
Errors are WorkflowError: unknown, finished, call (the call itself failed; the instance
may or may not have recorded it), refused (any other answer; `.status` has its status).

Build-time rule of componentize-py: a module first imported while an event runs is not
found. Create clients at module level (or import `wkguest.actors` in the app), so the
actors binding is imported when the app is.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..durations import Duration, to_ms
from . import cbor
from .errors import CborError, WorkflowError
from .status import (
    CONTENT_TYPE,
    PREFIX,
    PROTOCOL,
    Event,
    Status,
    Update,
    check_answer,
    events_of,
)

KEEP: Any = object()  # restart's input left out: the instance's own

Transport = Callable[[str, str, str, bytes], tuple[int, bytes]]
"""(instance id, method, path, body) → (status, body): how a client reaches its class."""


class Client:
    """The client of one workflow class, for other actors: its instances' start, status,
    events sent and emitted, queries, cancel and the operator's moves, each one actor
    call (wk-workflow/v1)."""

    def __init__(self, cls: str, *, transport: Transport | None = None) -> None:
        """A client of workflow class `cls`. `transport` replaces `actors.call` (tests)."""
        self.cls = cls
        self._send = transport or _actor_transport(cls)

    def start(self, id: str, input: Any = None, *,
              labels: Mapping[str, str] | None = None,
              event: tuple[str, Any] | None = None,
              update: tuple[str, Any] | None = None,
              update_id: str | None = None,
              idempotency_key: str | None = None,
              debounce: Duration | None = None) -> Status:
        """Start instance `id` with `input` (see core/values.py for the types) and
        `labels`, which operators list it by (at most 16; keys 1 to 64 bytes, values at
        most 256: core/labels.py). An instance that exists (running, or finished and
        still kept) is left as it is, its labels too: its status comes back with
        `created` False, and `input_differs` True if `input` is not the instance's (it
        was ignored). `event`: (name, payload), delivered in the same request whether
        the start creates the instance or finds it running (signal-with-start; with the
        creation, atomically). `update`: (name, arg), an update sent the same way
        (update-with-start; `update_id` makes it idempotent): `Status.update` says how it
        stands. Raises WorkflowError (refused, 400: labels out of bounds; with an event
        or an update, "finished" if the instance has finished: nothing delivered;
        "no-update", "update-rejected": nothing recorded, the instance not created).
        `idempotency_key`: a start sent again with it answers as the first did (`created`
        included) and delivers its event never again. `debounce` (a duration): the
        instance begins once that long has passed with no newer debounced start of this
        id, with the newest input (`created` is the first's alone)."""
        msg = {"input": input, **({"labels": dict(labels)} if labels else {}),
               **with_start_fields(event, update, update_id),
               **({"idempotency_key": idempotency_key} if idempotency_key else {}),
               **({} if debounce is None else {"debounce_ms": to_ms(debounce, "debounce")})}
        return Status.from_map(self._call(id, "start", msg))

    def status(self, id: str, held_by: bool = False) -> Status:
        """`held_by`: also say who runs it now (Status.held_by, as the host names it).
        Raises WorkflowError ("unknown": never started, or past its retention)."""
        return Status.from_map(self._call(id, "status", {"held_by": True} if held_by
                                          else {}))

    def send_event(self, id: str, name: str, payload: Any = None) -> None:
        """Deliver event `name`; the oldest waiting one is taken by the next matching
        `wait_for_event`. Raises WorkflowError (unknown, finished, refused: 429 when the
        instance keeps too many events, 413 for a payload over the limit)."""
        self._call(id, "event", {"name": name, "payload": payload})

    def cancel(self, id: str, compensate: bool = False) -> Status:
        """Cancel at once (a step running now finishes first, its result unused).
        Cancelling a finished instance changes nothing. `compensate`: instead, the
        instance (state compensating) runs the compensations of its completed steps,
        newest first, and then finishes as cancelled; a parked one is cancelled at once,
        compensating nothing. Raises WorkflowError."""
        return Status.from_map(self._call(id, "cancel", {"compensate": True} if compensate
                                          else {}))

    # -- an operator's moves (operator/moves.py) -------------------------------------------------

    def terminate(self, id: str, reason: str | None = None) -> Status:
        """Stop it at once, as terminated: no compensation runs; its children not
        detached are terminated too. A finished instance is left as it is (its status
        says how it finished). Raises WorkflowError."""
        return Status.from_map(self._call(id, "terminate", {} if reason is None
                                          else {"reason": reason}))

    def pause(self, id: str) -> Status:
        """Pause a running, waiting or compensating instance: it starts no new work (a
        step running now finishes first) and still records the events sent to it.
        Raises WorkflowError (refused, 409: parked; finished)."""
        return Status.from_map(self._call(id, "pause", {}))

    def resume(self, id: str) -> Status:
        """Resume a paused instance where it stopped. Raises WorkflowError (refused,
        409: not paused)."""
        return Status.from_map(self._call(id, "resume", {}))

    def rescue(self, id: str) -> Status:
        """Run a parked or failed instance again from its failing position under the
        code now deployed (a failed one's last failed step runs again, with fresh
        attempts). Raises WorkflowError (refused, 409: another state, or a failed
        instance whose compensations have run: restart it)."""
        return Status.from_map(self._call(id, "rescue", {}))

    def restart(self, id: str, *, from_position: int | None = None,
                step: str | None = None, occurrence: int = 1, input: Any = KEEP) -> Status:
        """Run it again: from the start (a new run id, an empty journal; `input=` gives
        a new input), or from a position (`from_position`, or the `occurrence`-th
        position named `step`), keeping the results recorded before it and its run id.
        Raises WorkflowError."""
        msg: dict[str, Any] = {} if input is KEEP else {"input": input}
        if from_position is not None:
            msg["from"] = from_position
        if step is not None:
            msg |= {"step": step, "occurrence": occurrence}
        return Status.from_map(self._call(id, "restart", msg))

    def events(self, id: str, after: int = 0, limit: int = 100) -> list[Event]:
        """Up to `limit` (at most 500) events the instance emitted, from offset `after`
        (the first `after` are skipped: pass the last offset read + 1 to go on).
        Raises WorkflowError."""
        return events_of(self._call(id, "events", {"after": after, "limit": limit}))

    def query(self, id: str, name: str, arg: Any = None) -> Any:
        """The answer of the instance's query handler `name` to `arg`, over the state its
        recorded journal replays to (nothing new runs). Raises WorkflowError ("no-query":
        the workflow registers no such query; "refused" with status 409: its journal does
        not replay with this code, 422: the handler raised)."""
        return self._call(id, "query", {"name": name, "arg": arg}).get("result")

    def update(self, id: str, name: str, arg: Any = None, *,
               update_id: str | None = None) -> Update:
        """Send update `name` with `arg` to the workflow's handler (`wf.on_update`):
        accepted at once, or refused (WorkflowError "no-update", "update-rejected":
        nothing recorded). An actor's call is answered as the update stands when it is
        accepted ("accepted"): its handler runs in the instance's next event, so ask
        again with `update_status(id, u.id)`. `update_id` makes the call idempotent (one
        is made if left out). Raises WorkflowError (unknown, finished, refused: 429 when
        the instance keeps too many waiting updates)."""
        msg = {"name": name, "arg": arg, **({"id": update_id} if update_id else {})}
        return Update.from_answer(self._call(id, "update", msg))

    def update_status(self, id: str, update_id: str) -> Update:
        """How update `update_id` stands (`Update.value()` gives its result once ended).
        Raises WorkflowError (refused, 404: the instance keeps no such update)."""
        return Update.from_answer(self._call(id, "update", {"id": update_id}))

    def _call(self, id: str, route: str, msg: dict[str, Any]) -> Any:
        status, body = self._send(id, "POST", PREFIX + route, cbor.dumps(msg))
        try:
            doc = cbor.loads(body) if body else None
        except CborError:
            doc = None
        return check_answer(status, doc, body[:200].decode("utf-8", "replace"))


def with_start_fields(event: tuple[str, Any] | None, update: tuple[str, Any] | None,
                      update_id: str | None) -> dict[str, Any]:
    """A start's `event` or `update` field (the clients' start(event=, update=))."""
    out: dict[str, Any] = {}
    if event is not None:
        out["event"] = {"name": event[0], "payload": event[1]}
    if update is not None:
        out["update"] = {"name": update[0], "arg": update[1],
                         **({"id": update_id} if update_id else {})}
    return out


def _actor_transport(cls: str) -> Transport:
    # Imported when a client is made (at the app's import, in a build; the actor's export
    # imports wkguest.actors then anyway), not with this module: on plain CPython the
    # bindings exist only once a test kit has put them in place, maybe after this import.
    try:
        from wkguest import actors as _actors
        from wkguest.errors import CallError as _CallError
    except ModuleNotFoundError:
        raise RuntimeError("workflow.Client needs the actors binding (inside a component, "
                           "or in wkhost's test kit), or a transport") from None
    # wk-protocol: the host delivers the call only to a class that declares it, so a
    # client pointed at a class that is not a workflow class runs none of its code.
    headers = [("content-type", CONTENT_TYPE), ("wk-protocol", PROTOCOL)]

    def send(id: str, method: str, path: str, body: bytes) -> tuple[int, bytes]:
        try:
            r = _actors.call(cls, id, method, path, body, headers)
        except _CallError as e:
            if e.kind == "not-declared":
                raise WorkflowError("not-a-workflow", f"class {cls!r} is not a workflow "
                                    f"class; nothing of it was run ({e.reason})") from None
            raise WorkflowError("call", e.reason) from None
        return r.status, r.body

    return send
