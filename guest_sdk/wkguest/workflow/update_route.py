"""The update route of wk-workflow/v1, and the acceptance that update-with-start shares.

    update   POST  {name, arg, id?, wait_ms?}   accept update `name` with `arg`, or answer
                                                the update `id` names, as it stands now
             POST  {id, wait_ms?}               ask again how update `id` stands

An update is accepted in one durable transaction (updates/inbox.py), and only if the instance's
code, replayed dry to where the instance is (events/dry_replay.py), registers a handler
of that name, and its validator, if it has one, returns rather than raises. The
validator runs after the writes and before their COMMIT, marked read-only as a query
handler is (wkguest.readonly): a refusal rolls the writes back, so nothing is recorded,
and the COMMIT is a statement that changes nothing by itself, so the mark allows it.
The validator sees the state the instance has when the update arrives.

The answer is `{"update": {id, name, state, position, result, error, ...}}`, held while
the update is not done and the request asked to wait (`wait_ms`; the host holds it up
to MAX_HOLD_MS, routes.held). An update still running when the hold ends answers its
state, "accepted" or "taken", with its id: the same request again, or `{id}` alone, asks
again. Idempotent by id: a request with the id of an update the instance keeps answers
that update and records nothing (a different name is a 409). An id left out is made
here, and the answer names it. The instance keeps the last inbox.MAX_KEPT ended updates.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from wkguest.readonly import read_only

from .backend import atomically
from .core import counted
from .core.explain import describe
from .core.instance import FINISHED, HELD, StatusRow
from .core.requests import BadRequest
from .core.runner import Runner
from .core.values import check_name, decode
from .errors import CodeError, StoreFault, WorkflowSignal
from .events import dry_replay
from .routes import Reply, encode_field, held, reply
from .updates import inbox, taking

MAX_ID_CHARS = 128


def answer(runner: Runner, msg: dict[str, Any], row: StatusRow, hold_state: str | None
           ) -> Reply:
    """The update route's answer (see the module's doc). `hold_state`: the id the first
    delivery answered, when the host delivers the request again after a hold."""
    u = deliver(runner, msg, row, hold_state)
    m = shown(u, row)
    return reply({"update": m}) if m["state"] in inbox.DONE else \
        held(msg, row, {"update": m}, u.id)


def deliver(runner: Runner, msg: dict[str, Any], row: StatusRow | None,
            known_id: str | None = None, create: Callable[[], object] | None = None
            ) -> inbox.Update:
    """The update `msg` names: the one the instance keeps under its id (or `known_id`),
    or a new one accepted, after `create()` made the instance (`row` None: an
    update-with-start's, start_route.py). Raises BadRequest for a refusal, StoreFault."""
    id = known_id or id_field(msg)
    name = msg.get("name")
    if id is not None and row is not None:
        known = inbox.read(runner.db, id)
        if known is not None:
            if name is not None and name != known.name:
                raise BadRequest(409, "update-id-taken", f"update {id!r} is the instance's "
                                 f"update {known.name!r}, not {name!r}: give another id")
            return known
        if name is None:
            raise BadRequest(404, "unknown-update", f"the instance keeps no update {id!r}")
    fields = update_fields(runner, msg)
    if row is not None and row.state in FINISHED:
        raise BadRequest(409, "finished", f"the instance is {row.state}: it takes no update")
    if row is not None and inbox.count_waiting(runner.db) >= runner.config.max_events:
        raise BadRequest(429, "too-many-updates", "the instance already keeps "
                         f"{runner.config.max_events} updates that it has not taken "
                         "(Config.max_events)")
    id = id or os.urandom(8).hex()
    accept(runner, id, *fields, alarm=row is not None and row.state not in HELD,
           create=create)
    got = inbox.read(runner.db, id)
    if got is None:
        raise StoreFault(f"update {id!r} is not there after it was accepted")
    return got


def id_field(msg: dict[str, Any]) -> str | None:
    id = msg.get("id")
    if id is None:
        return None
    if not (isinstance(id, str) and 0 < len(id) <= MAX_ID_CHARS and id.isprintable()):
        raise BadRequest(400, "bad-request", "'id' must be text of 1 to "
                         f"{MAX_ID_CHARS} printable characters")
    return id


def update_fields(runner: Runner, msg: dict[str, Any]) -> tuple[str, str, bool]:
    """An update's name, and its arg as stored (JSON text, tagged). Raises BadRequest."""
    name = msg.get("name")
    try:
        check_name(name, "update")
    except (TypeError, ValueError) as e:
        raise BadRequest(400, "bad-request", str(e)) from None
    text, tagged = encode_field(msg.get("arg"), runner.config.max_value_bytes,
                                "the update's arg")
    return str(name), text, tagged


def accept(runner: Runner, id: str, name: str, text: str, tagged: bool, *, alarm: bool,
           create: Callable[[], object] | None = None) -> None:
    """Accept update `id` (see the module's doc), and `create()` the instance first in
    the same transaction (update-with-start). Raises BadRequest (nothing recorded: no
    such handler, the validator refused, the journal does not replay), StoreFault."""
    db = runner.db
    now = db.now()
    if alarm:  # before the validator's read-only mark, which refuses alarms
        db.alarm_set(now)

    def accepted() -> None:
        db.exec_many(inbox.accept_writes(id, name, text, tagged, now))
        if create is not None:
            create()
        validate(runner, name, decode(text, tagged))

    atomically(db, accepted, "/*wk:update-begin*/ BEGIN IMMEDIATE",
               "/*wk:update-commit*/ COMMIT")
    counted.update(db, "accepted")


def validate(runner: Runner, name: str, arg: Any) -> None:
    """Whether the instance takes update `name` with `arg` now: its handler registered
    where a dry replay gets to, and its validator's verdict. Raises BadRequest."""
    try:
        got = dry_replay.replay(runner)
    except dry_replay.NotReplayable as e:
        raise BadRequest(409, "not-replayable", "the instance's journal does not replay "
                         f"with this code, so it cannot take an update: {e}") from None
    if got is None:
        raise StoreFault("the instance is not there for its update")
    handlers = taking.handlers_of(got.run)
    registered = handlers.get(name)
    if registered is None or got.ended:
        known = ", ".join(sorted(handlers)) or "none"
        why = ("its function has returned" if got.ended else
               f"it registers no handler {name!r} where it is (it registers: {known})")
        raise BadRequest(404, "no-update", f"the workflow takes no update {name!r}: {why}")
    if registered.validator is None:
        return
    # A primitive the validator calls raises this at once: a validator advances nothing.
    got.run.stopped = CodeError(f"the validator of update {name!r} may not call workflow "
                                "primitives (it only reads the workflow's state)")
    try:
        with read_only(f"the validator of update {name!r}"):
            registered.validator(arg)
    except (Exception, WorkflowSignal) as e:
        raise BadRequest(422, "update-rejected", f"the validator of update {name!r} "
                         f"refused it: {describe(e)}") from None


def shown(u: inbox.Update, row: StatusRow) -> dict[str, Any]:
    """Update `u` as the answer shows it. One the instance finished without ending is
    failed, saying so: nothing will take it, or end its handler, any more."""
    m = inbox.shown(u)
    if u.state == inbox.COMPLETED and u.result is not None:
        m["result"] = decode(u.result, u.result_tagged)
    elif u.state not in inbox.DONE and row.state in FINISHED:
        what = "took it" if u.state == inbox.ACCEPTED else "ended its handler"
        m["state"], m["error"] = inbox.FAILED, (
            f"the instance finished ({row.state}) before it {what}")
    return m
