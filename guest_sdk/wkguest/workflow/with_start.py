"""Signal-with-start: a start that carries an event (`event: {name, payload}`), which
the instance gets whether the start creates it or finds it running (Temporal's
signal-with-start, its #537).

New: the event and the instance are recorded in one transaction, made durable by its
COMMIT: a cut before it leaves neither (the client's retry starts it again), after it
both, so a retried request never delivers the event twice into a new instance. Found
running (or parked, or paused): the event is delivered as the event route delivers it
(routes.py), and the answer is the start's, `created: false`, with `events_pending`.
Found finished: 409 `finished`, nothing recorded, as an event to it gets: a finished
instance is kept (its retention) and a start never makes it again.

A start delivered again after a hold (`wait_ms`) delivers nothing again: the first
delivery did.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import routes, start_keys
from .backend import atomically
from .core.instance import StatusRow
from .core.requests import BadRequest
from .core.runner import Runner
from .core.values import check_name
from .routes import Reply, encode_field

Create = Callable[[], StatusRow | None]
_BEGIN, _COMMIT = "/*wk:with-start-begin*/ BEGIN IMMEDIATE", "/*wk:with-start-commit*/ COMMIT"


class _Refused(Exception):
    """The event was refused (finished, too many events): its transaction rolls back."""

    def __init__(self, reply: Reply) -> None:
        super().__init__(reply.status)
        self.reply = reply


def event_field(msg: dict[str, Any]) -> dict[str, Any] | None:
    """The start's `event: {name, payload}`, checked; None if it has none."""
    ev = msg.get("event")
    if ev is None:
        return None
    if not isinstance(ev, dict):
        raise BadRequest(400, "bad-request", "'event' must be a map {name, payload}")
    try:
        check_name(ev.get("name"), "event")
    except (TypeError, ValueError) as e:
        raise BadRequest(400, "bad-request", f"'event': {e}") from None
    return ev


def deliver_to(runner: Runner, ev: dict[str, Any], row: StatusRow,
               key: str | None = None) -> Reply | None:
    """The event to an instance the start found: None once delivered, else the
    refusal (finished, too many events) that answers the start. With the start's
    idempotency `key`, kept in the event's transaction (start_keys.py)."""
    if key is None:
        out = routes.event(runner, ev, row)
        return None if out.status == 200 else out
    db = runner.db

    def keep_and_deliver() -> None:
        start_keys.keep(db, key, False, db.now())
        out = routes.event(runner, ev, row)
        if out.status != 200:
            raise _Refused(out)  # the key goes with it: a retry is a new start

    try:
        atomically(db, keep_and_deliver, _BEGIN, _COMMIT)
    except _Refused as e:
        return e.reply
    return None


def create_with(runner: Runner, ev: dict[str, Any], create: Create) -> StatusRow | None:
    """`create()` the instance with the event recorded in the same transaction (see the
    module's doc). Raises BadRequest for a payload the limits refuse, StoreFault."""
    text, tagged = encode_field(ev.get("payload"), runner.config.max_value_bytes,
                                "the event's payload")
    db = runner.db

    def add_and_create() -> StatusRow | None:
        runner.store.add_event(str(ev["name"]), text, tagged, db.now())
        return create()

    created = atomically(db, add_and_create, _BEGIN, _COMMIT)
    return created if created is None else _with_event(created)


def _with_event(row: StatusRow) -> StatusRow:
    row.events_pending += 1
    return row
