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
    update   POST      accept an update, its answer held until its handler ends, or ask
                       how one stands (update_route.py)
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

from collections.abc import Callable
from typing import Any

from . import routes, test_route, transfer_route, update_route
from .core.instance import RESTING, StatusRow
from .core.listing import steps
from .core.requests import BadRequest
from .errors import StoreFault
from .events import routes as event_routes
from .operator.moves import OperatorMoves
from .routes import HOLD_MS as HOLD_MS  # what serve.py and tests read here
from .routes import HOLD_STATE as HOLD_STATE
from .routes import Reply as Reply  # what `handle` answers
from .routes import encode_field, held, message, refuse, reply, status_map
from .runner import Runner
from .start_route import StartRoute

_ROUTES = {"start": "POST", "event": "POST", "cancel": "POST",
           "status": "GET POST", "steps": "GET POST", "summary": "GET POST",
           "events": "GET POST", "query": "GET POST", "update": "POST",
           "child-done": "POST", "watch": "POST",
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
        self.start = StartRoute(runner)

    def handle(self, method: str, path: str, body: bytes, sender: str,
               hold_state: str | None = None, idempotency_key: str | None = None) -> Reply:
        """Answer one request. Never raises for bad input (400..429) or storage (503).

        `hold_state` is the request's `wk-hold-state` header: set by the host when it
        delivers again a request whose answer it held (`wait_ms`, below).
        `idempotency_key`: its Idempotency-Key header (a start's: start_keys.py)."""
        try:
            new_actor, self.runner.just_created = self.runner.just_created, False
            row = None if new_actor else self.store.status()
            if row is not None and row.state not in RESTING and _reads_status(path):
                error = self.runner.note_trap()
                if error is not None:
                    row.error = error
            out = self._dispatch(method, path, body, sender, row, hold_state,
                                 idempotency_key)
            if row is None and out.status != 200:
                self.runner.forget()
                self.db.delete_self()  # never started: leave nothing behind
            return out
        except StoreFault as e:
            self.runner.forget()
            return refuse(503, "storage", f"the instance's storage failed: {e}")

    def _dispatch(self, method: str, path: str, body: bytes, sender: str,
                  row: StatusRow | None, hold_state: str | None, key: str | None) -> Reply:
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
                return self.start.answer(msg, row, sender, hold_state, key)
            if route in _TOOLS:
                return _TOOLS[route](self.runner, msg)
            if row is None:
                return refuse(404, "unknown", "no such workflow instance (never started, "
                              "or past its retention)")
            if route == "update":
                return update_route.answer(self.runner, msg, row, hold_state)
            return self._routes()[route](msg, row)
        except BadRequest as e:
            return refuse(e.status, e.kind, str(e))

    def _routes(self) -> dict[str, Callable[[dict[str, Any], StatusRow], Reply]]:
        runner = self.runner
        return {"status": lambda m, row: held(m, row, status_map(
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

def _reads_status(path: str) -> bool:  # it reports the state: a pending cut noted first
    return path.rsplit("/", 1)[-1] in ("status", "summary", "steps")
