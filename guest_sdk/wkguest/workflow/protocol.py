"""The runner's side of wk-workflow/v1: requests to the instance's `handle`.

Routes (`/wk-workflow/v1/<route>`, CBOR map bodies; docs/workflow-protocol.md):

    start    POST      record the input and a new run_id, alarm to now; an existing
                       instance is left as it is (start is idempotent while kept)
    status   GET|POST  the status map
                       start and status take `wait_ms`: the host holds the answer until
                       the instance rests (finished or parked), for up to that long (a
                       single request that answers when the workflow is done)
    event    POST      record an event, alarm to now (a parked or paused one: no alarm)
    cancel   POST      mark cancelled at once, alarm to the end of retention (a parked
                       instance too: cancelling it runs nothing)
    steps    GET|POST  the recorded positions, a page at a time (operators' `steps`)
    summary  GET|POST  the status map without the output (for listing many instances)
    events   GET|POST  the emitted-event stream from an offset (events/routes.py)
    query    GET|POST  a query handler's answer over a dry replay (events/routes.py,
                       events/dry_replay.py)
    child-done  POST   a child's (or awaited instance's) notice that it finished, and
    watch       POST   a workflow's wait for this one to finish (actors only: children/)
    terminate, pause, resume, rescue, restart
             POST      an operator's moves (operator/moves.py): each answers the status after it
    test, export, import
             POST      operators' tools, on an id not started too: a test's mocks, reads
                       and dry replay (test_route.py; only with --fake-clock); the whole
                       state as a document, and one made an instance (transfer_route.py)

The start is answered here; the other routes by routes.py and the features' own.

A start may carry `parent: {cls, id}` and `detached` (children/calls.py): the new
instance records its parent (children/registry.py), and the answer for an existing one
says whose child it is (`parent`) and, if the input differs, the instance's (`input`),
so the parent can name both. Its `labels` are the new instance's (core/labels.py).

The client routes only record and answer; runs happen in on_alarm, with one exception: an
operator's start that waits (`wait_ms`) runs the new instance's first run in its own
event (`_create_and_run`). Only senders the host marks "actor" or "operator" are served
(the public gets 403). A request to an id that was never started (or is past its
retention) leaves nothing behind: the actor the host created for it deletes itself in
the same event.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from . import routes, test_route, transfer_route
from .children.registry import Registry
from .core import counted, spans
from .core.instance import RESTING, StatusRow
from .core.labels import start_field
from .core.listing import steps
from .core.requests import BadRequest, int_field
from .core.values import decode, encode
from .errors import StoreFault, UnsupportedValue, ValueTooLarge
from .events import routes as event_routes
from .operator.moves import OperatorMoves
from .routes import Reply as Reply  # what `handle` answers
from .routes import encode_field, message, refuse, reply, status_map
from .runner import Runner

# The host's held answers (wkhost's host/core/holds.py, which spells them too: no module
# crosses the WIT boundary, so tests/unit/test_hold_constants.py checks that both agree).
# Only the front door honours them.
HOLD_MS = "wk-hold-ms"
HOLD_STATE = "wk-hold-state"
_CREATED = "created"
_ROUTES = {"start": "POST", "event": "POST", "cancel": "POST",
           "status": "GET POST", "steps": "GET POST", "summary": "GET POST",
           "events": "GET POST", "query": "GET POST", "child-done": "POST", "watch": "POST",
           "terminate": "POST", "pause": "POST", "resume": "POST", "rescue": "POST",
           "restart": "POST", "test": "POST", "export": "POST", "import": "POST"}
_TOOLS = {"test": test_route.answer, "export": transfer_route.export,
          "import": transfer_route.import_}


class Protocol:
    """The routes of wk-workflow/v1 for one instance, answered over its runner (see the
    module's doc)."""

    def __init__(self, runner: Runner) -> None:
        self.runner = runner
        self.store = runner.store
        self.db = runner.db
        self.moves = OperatorMoves(runner)

    def handle(self, method: str, path: str, body: bytes, sender: str,
               hold_state: str | None = None) -> Reply:
        """Answer one request. Never raises for bad input (400..429) or storage (503).

        `hold_state` is the request's `wk-hold-state` header: set by the host when it
        delivers again a request whose answer it held (`wait_ms`, below)."""
        try:
            new_actor, self.runner.just_created = self.runner.just_created, False
            row = None if new_actor else self.store.status()
            if row is not None and row.state not in RESTING and _reads_status(path):
                error = self.runner.note_trap()
                if error is not None:
                    row.error = error
            out = self._dispatch(method, path, body, sender, row, hold_state)
            if row is None and out.status != 200:
                self.runner.forget()
                self.db.delete_self()  # never started: leave nothing behind
            return out
        except StoreFault as e:
            self.runner.forget()
            return refuse(503, "storage", f"the instance's storage failed: {e}")

    def _dispatch(self, method: str, path: str, body: bytes, sender: str,
                  row: StatusRow | None, hold_state: str | None) -> Reply:
        version, _, route = path.removeprefix("/wk-workflow/").partition("/")
        if not path.startswith("/wk-workflow/") or version != "v1":
            return refuse(404, "route", f"{path!r} is not a route of wk-workflow/v1")
        if sender not in ("actor", "operator"):
            return refuse(403, "forbidden", "workflows answer only actors and operators")
        allowed = _ROUTES.get(route)
        if allowed is None:
            return refuse(404, "route", f"wk-workflow/v1 has no route {route!r}")
        if method not in allowed.split():
            return refuse(405, "method", f"{route} takes {allowed.replace(' ', ' or ')}")
        if route in ("child-done", "watch") and sender != "actor":
            return refuse(403, "forbidden", f"{route} is a workflow's, an actor's")
        if route in _TOOLS and sender != "operator":
            return refuse(403, "forbidden", f"{route} (a tool's route) is an operator's")
        try:
            msg = message(body)
            if route == "start":
                return self._start(msg, row, sender, hold_state)
            if route in _TOOLS:
                return _TOOLS[route](self.runner, msg)
            if row is None:
                return refuse(404, "unknown", "no such workflow instance (never started, "
                              "or past its retention)")
            return self._routes()[route](msg, row)
        except BadRequest as e:
            return refuse(e.status, e.kind, str(e))

    def _routes(self) -> dict[str, Callable[[dict[str, Any], StatusRow], Reply]]:
        runner = self.runner
        return {"status": lambda m, row: self._held(m, row, status_map(
                    runner, row, held_by=m.get("held_by") is True, input=m.get("input") is True)),
                "event": lambda m, row: routes.event(runner, m, row),
                "cancel": lambda m, row: routes.cancel(runner, m, row),
                "steps": lambda m, row: reply(steps(self.store, m)),
                "summary": lambda m, row: reply(status_map(runner, row, output=False)),
                "events": lambda m, row: reply(event_routes.events(runner, m)),
                "query": lambda m, row: routes.query(runner, m, row),
                "child-done": lambda m, row: routes.child_done(runner, m, row),
                "watch": lambda m, row: routes.watch(runner, m, row),
                "terminate": self._moved(lambda m, row: self.moves.terminate(row, m)),
                "pause": self._moved(lambda m, row: self.moves.pause(row)),
                "resume": self._moved(lambda m, row: self.moves.resume(row)),
                "rescue": self._moved(lambda m, row: self.moves.rescue(row)),
                "restart": self._moved(lambda m, row: self.moves.restart(
                    row, m, lambda v, what: encode_field(v, runner.config.max_value_bytes, what)))}

    def _moved(self, move: Callable[[dict[str, Any], StatusRow], None]
               ) -> Callable[[dict[str, Any], StatusRow], Reply]:
        """An operator's move (operator/moves.py), answered with the status after it."""
        def route(msg: dict[str, Any], row: StatusRow) -> Reply:
            move(msg, row)
            return reply(status_map(self.runner, self.store.status() or row))
        return route

    def _start(self, msg: dict[str, Any], row: StatusRow | None, sender: str,
               hold_state: str | None) -> Reply:
        parent = _parent_field(msg)
        if row is not None:
            # Delivered again after a hold: the first delivery's answer said created.
            created_here = hold_state == _CREATED
            answer = {**status_map(self.runner, row), "created": created_here}
            if not created_here and "input" in msg:
                # The instance stays as it is; the caller learns its input was ignored.
                answer["input_differs"] = self._input_differs(msg["input"])
            if parent is not None:  # a parent's start: whose child this one is
                self._parent_answer(answer)
            return self._held(msg, row, answer, _CREATED if created_here else None)
        wait_ms = int_field(msg, "wait_ms", 0)  # refused before anything is recorded
        text, tagged = encode_field(msg.get("input"), self.runner.config.max_value_bytes,
                                    "the input")
        labels = start_field(msg)
        if parent is not None:  # before the create: its durable insert syncs it too
            Registry(self.db).set_parent(*parent, msg.get("detached") is True)
        self.store.publish.start_labels(labels)  # so are they; its publish carries them
        now = self.db.now()
        run_id = self.runner.new_run_id()
        if wait_ms > 0 and sender == "operator":
            created = self._create_and_run(run_id, text, tagged, now)
        else:
            created = self._create(run_id, text, tagged, now)
        if created is None:
            raise StoreFault("the new instance is not there after its insert")
        return self._held(msg, created, {**status_map(self.runner, created), "created": True},
                          _CREATED)

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

    def _held(self, msg: dict[str, Any], row: StatusRow, answer: dict[str, Any],
              state: str | None = None) -> Reply:
        """`answer`, which the host holds while the instance moves on, for up to the
        message's `wait_ms`: the host delivers the request again after each event of the
        instance, until it rests (finished, or parked: nothing of its own moves it then)
        or the time is up (wkhost's host/core/holds.py). `state` comes back to `handle`
        as `hold_state` with the request delivered again."""
        out = reply(answer)
        wait_ms = int_field(msg, "wait_ms", 0)
        if wait_ms and row.state not in RESTING:
            out.headers.append((HOLD_MS, str(wait_ms)))
            if state is not None:
                out.headers.append((HOLD_STATE, state))
        return out


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


def _reads_status(path: str) -> bool:  # it reports the state: a pending cut noted first
    return path.rsplit("/", 1)[-1] in ("status", "summary", "steps")


def _sorted(text: str) -> str:
    return json.dumps(json.loads(text), sort_keys=True, ensure_ascii=False)


