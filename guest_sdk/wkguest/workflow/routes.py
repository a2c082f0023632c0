"""The routes of wk-workflow/v1 but the start (protocol.py): the status map, an event
received, a cancel, a child's notice and a query; and the form of every answer, a CBOR map
(`Reply`). docs/workflow-protocol.md has the maps."""

from __future__ import annotations

from typing import Any, NamedTuple

from . import cbor
from .children import notices, watchers
from .core.instance import FINISHED, HELD, PARKED, PAUSED, RESTING, StatusRow
from .core.kinds import shown
from .core.requests import BadRequest, int_field
from .core.runner import Runner
from .core.values import check_name, decode, encode
from .errors import CborError, StoreFault, UnsupportedValue, ValueTooLarge
from .events import routes as event_routes
from .status import CONTENT_TYPE

# The host's held answers (wkhost's host/core/holds.py, which spells them too: no module
# crosses the WIT boundary, so tests/unit/test_hold_constants.py checks that both agree).
# Only the front door honours them.
HOLD_MS = "wk-hold-ms"
HOLD_STATE = "wk-hold-state"


class Reply(NamedTuple):
    """A route's answer: the HTTP status, the CBOR body and its headers."""

    status: int
    body: bytes
    headers: list[tuple[str, str]]


def reply(msg: dict[str, Any], status: int = 200) -> Reply:
    return Reply(status, cbor.dumps(msg), [("content-type", CONTENT_TYPE)])


def refuse(status: int, kind: str, message: str) -> Reply:
    return reply({"error": kind, "message": message}, status)


def status_map(runner: Runner, row: StatusRow, output: bool = True, held_by: bool = False,
               input: bool = False) -> dict[str, Any]:
    """The status map of the instance in `row` (`output`, `held_by`, `input`: asked for)."""
    m: dict[str, Any] = {
        "state": row.state, "run_id": row.run_id, "wake_at": row.wake_at,
        "waiting_for": [shown(row.waiting_for)] if row.waiting_for else [],
        "error": row.error or (None if row.state in FINISHED else runner.store_fault),
        "positions": row.positions, "created_at": row.created_at,
        "updated_at": row.updated_at, "finished_at": row.finished_at,
        "events_pending": row.events_pending, "runs": row.runs,
        "updates_pending": row.updates_pending,
    }
    if m["waiting_for"] and row.waiting_for != m["waiting_for"][0]:
        m["wake_at"] = None  # a child's wait: no time of its own (children/calls.py)
    if row.previous_run_id is not None:  # continued as new (core/continuation.py)
        m["previous_run_id"] = row.previous_run_id
    if row.state == PARKED:  # nothing writes its row until an operator moves it on
        m["parked_at"] = row.updated_at
    if row.state == PAUSED:
        m["paused_at"] = row.updated_at
    if held_by:  # asked for: who runs it now, as the host names it (lifecycle.holder)
        m["held_by"] = runner.db.holder()
    if output and row.state == "completed" and row.output is not None:
        m["output"] = decode(row.output, row.output_tagged)
    if input:  # asked for (an operator's console): the input of this run
        stored = runner.store.input()
        m["input"] = None if stored is None else decode(*stored)
    return m


def event(runner: Runner, msg: dict[str, Any], row: StatusRow) -> Reply:
    name = msg.get("name")
    try:
        check_name(name, "event")
    except (TypeError, ValueError) as e:
        raise BadRequest(400, "bad-request", str(e)) from None
    if row.state in FINISHED:
        return refuse(409, "finished", f"the instance is {row.state}: it takes no events")
    cap = runner.config.max_events
    if row.events_pending >= cap:
        return refuse(429, "too-many-events", f"the instance already keeps {cap} events "
                      "that no wait has taken (Config.max_events)")
    text, tagged = encode_field(msg.get("payload"), runner.config.max_value_bytes,
                                "the event's payload")
    now = runner.db.now()
    if row.state not in HELD:  # kept for when an operator moves it: it runs nothing
        runner.db.alarm_set(now)
    runner.store.add_event(str(name), text, tagged, now)
    return reply({"events_pending": row.events_pending + 1})


def cancel(runner: Runner, msg: dict[str, Any], row: StatusRow) -> Reply:
    if row.state not in FINISHED:
        runner.cancel(compensate=msg.get("compensate") is True)
        row = runner.store.status() or row
    return reply(status_map(runner, row))


def child_done(runner: Runner, msg: dict[str, Any], row: StatusRow) -> Reply:
    if row.state in FINISHED:  # the child counts this as delivered: a no-op
        return refuse(409, "finished", f"the instance is {row.state}: it waits for "
                      "no child")
    try:
        recorded = notices.record_notice(runner.store, msg, row.state in HELD)
    except ValueError as e:
        raise BadRequest(400, "bad-request", f"child-done: {e}") from None
    return reply({"recorded": recorded})


def watch(runner: Runner, msg: dict[str, Any], row: StatusRow) -> Reply:
    """Workflow `cls`/`id` waits for this instance to finish (children/awaited.py): its
    end now, if it has finished; else the watcher noted, durably, to be told at the end
    (children/watchers.py)."""
    cls, id = msg.get("cls"), msg.get("id")
    if not (isinstance(cls, str) and cls and isinstance(id, str) and id):
        raise BadRequest(400, "bad-request", "watch: 'cls' and 'id' must be non-empty text")
    if row.state in FINISHED:
        return reply({"finished": True, "run_id": row.run_id, "state": row.state,
                      "output": row.output, "tagged": row.output_tagged, "error": row.error})
    watchers.add(runner.db, cls, id)
    return reply({"finished": False, "state": row.state})


def query(runner: Runner, msg: dict[str, Any], row: StatusRow) -> Reply:
    answer = event_routes.query(runner, msg)
    if answer is None:  # its row went between the status read and the replay
        raise StoreFault("the instance is not there for its query")
    return reply(answer)


def message(body: bytes) -> dict[str, Any]:
    if not body:
        return {}
    try:
        msg = cbor.loads(body)
    except CborError as e:
        raise BadRequest(400, "bad-request", f"the body is not wk-workflow CBOR: {e}") from None
    if not isinstance(msg, dict):
        raise BadRequest(400, "bad-request", "the body must be a CBOR map")
    return msg


def encode_field(value: Any, limit: int, what: str) -> tuple[str, bool]:
    try:
        return encode(value, limit, what)
    except ValueTooLarge as e:
        raise BadRequest(413, "too-large", str(e)) from None
    except UnsupportedValue as e:
        raise BadRequest(400, "bad-request", str(e)) from None


def held(msg: dict[str, Any], row: StatusRow, answer: dict[str, Any],
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
