"""The read-only routes of wk-workflow/v1: `events` and `query`.

    events   GET|POST  the emitted-event stream from an offset, a page at a time
    query    GET|POST  a query handler's answer over the state a dry replay reaches

Neither writes anything: `events` reads the stream's table, and `query` replays dry
(dry_replay.py). docs/workflow-protocol.md has the maps.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.attempt_history import (
    DEFAULT_VALUE_BYTES,
    MAX_HISTORY_PAGE,
    MAX_VALUE_BYTES,
    add_history,
    add_values,
)
from ..core.kinds import STEP_RETRYING, WAIT, call_of, shown, state_of
from ..core.values import check_name, decode
from . import dry_replay as dry

if TYPE_CHECKING:
    from ..runner import Runner

MAX_EVENTS_PAGE = 500
MAX_STEPS_PAGE = 500


class BadRequest(Exception):
    """A refusal of the request: its status, its kind and the message."""

    def __init__(self, status: int, kind: str, message: str) -> None:
        super().__init__(message)
        self.status, self.kind = status, kind


def int_field(msg: dict[str, Any], key: str, default: int) -> int:
    v = msg.get(key, default)
    if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < 2**63:
        raise BadRequest(400, "bad-request", f"{key!r} must be a whole number from 0 to 2**63-1")
    return v


def events(runner: Runner, msg: dict[str, Any]) -> dict[str, Any]:
    """`{"after": n, "limit": k}` → the events from offset n (the first n are skipped)."""
    after = int_field(msg, "after", 0)
    limit = min(max(int_field(msg, "limit", 100), 1), MAX_EVENTS_PAGE)
    rows = runner.store.stream.read(after, limit + 1)
    page = [_event_map(r) for r in rows[:limit]]
    return {"events": page, "next": after + len(page), "more": len(rows) > limit}


def _event_map(r: tuple[Any, ...]) -> dict[str, Any]:
    seq, name, text, tagged, at, pos, run_id = r
    return {"offset": seq, "name": name, "payload": decode(text, bool(tagged)), "at": at,
            "pos": pos, "run_id": run_id}


def query(runner: Runner, msg: dict[str, Any]) -> dict[str, Any] | None:
    """`{"name": q, "arg": v}` → `{"result": ..., "position": p}`; None: no instance."""
    name = msg.get("name")
    try:
        check_name(name, "query")
    except (TypeError, ValueError) as e:
        raise BadRequest(400, "bad-request", str(e)) from None
    try:
        got = dry.answer(runner, str(name), msg.get("arg"))
    except dry.NoQuery as e:
        raise BadRequest(404, "no-query", str(e)) from None
    except dry.NotReplayable as e:
        raise BadRequest(409, "not-replayable", "the instance's journal does not replay "
                         f"with this code, so there is no state to answer from: {e}") from None
    except dry.QueryFailed as e:
        raise BadRequest(422, "query-failed", str(e)) from None
    if got is None:
        return None
    value, position = got
    return {"result": value, "position": position}


def bool_field(msg: dict[str, Any], key: str) -> bool:
    v = msg.get(key, False)
    if not isinstance(v, bool):
        raise BadRequest(400, "bad-request", f"{key!r} must be true or false")
    return v


def steps(runner: Runner, msg: dict[str, Any]) -> dict[str, Any]:
    """The steps route: the recorded positions from `from`, `limit` at a time; with
    `attempts`, each one's history, and with `values`, its recorded value's JSON text cut
    at `value_bytes` (core/attempt_history.py)."""
    start = int_field(msg, "from", 0)
    with_attempts, with_values = bool_field(msg, "attempts"), bool_field(msg, "values")
    cap = int_field(msg, "value_bytes", DEFAULT_VALUE_BYTES)
    if not 1 <= cap <= MAX_VALUE_BYTES:
        raise BadRequest(400, "bad-request",
                         f"'value_bytes' must be from 1 to {MAX_VALUE_BYTES}")
    page_max = MAX_HISTORY_PAGE if with_attempts else MAX_STEPS_PAGE
    limit = min(max(int_field(msg, "limit", 100), 1), page_max)
    rows = runner.store.steps(start, limit + 1)
    more = len(rows) > limit
    page = [_step_map(r) for r in rows[:limit]]
    if page and with_attempts:
        add_history(runner.store, page, rows[:limit])
    if page and with_values:
        add_values(runner.store, page, cap)
    return {"steps": page, "next": rows[limit][0] if more else None}


def _step_map(r: list[Any]) -> dict[str, Any]:
    pos, kind, name, attempts, error, next_at, wake_at, size, seq, updated = r
    label = shown(name)
    if label != name and call_of(kind) == WAIT:
        wake_at = None  # a child's wait: no timeout (its deadline is a stand-in)
    return {"pos": pos, "name": label, "kind": call_of(kind),
            "state": state_of(kind), "attempts": attempts, "error": error,
            "next_attempt_at": next_at if kind == STEP_RETRYING else None, "wake_at": wake_at,
            "result_bytes": size, "event_seq": seq, "updated_at": updated}
