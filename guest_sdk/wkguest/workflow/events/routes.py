"""The read-only routes of wk-workflow/v1: `events` and `query`.

    events   GET|POST  the emitted-event stream from an offset, a page at a time
    query    GET|POST  a query handler's answer over the state a dry replay reaches

Neither writes anything: `events` reads the stream's table, and `query` replays dry
(dry_replay.py). docs/workflow-protocol.md has the maps.
"""

from __future__ import annotations

from typing import Any

from ..core.requests import BadRequest, int_field
from ..core.runner import Runner
from ..core.values import check_name, decode
from . import dry_replay

MAX_EVENTS_PAGE = 500


def events(runner: Runner, msg: dict[str, Any]) -> dict[str, Any]:
    """`{"after": n, "limit": k}` → the events from offset n (the first n are skipped)."""
    after = int_field(msg, "after", 0)
    limit = min(max(int_field(msg, "limit", 100), 1), MAX_EVENTS_PAGE)
    rows = runner.store.stream.read(after, limit + 1)
    page = [_event_map(row) for row in rows[:limit]]
    return {"events": page, "next": after + len(page), "more": len(rows) > limit}


def _event_map(row: tuple[Any, ...]) -> dict[str, Any]:
    seq, name, text, tagged, at, pos, run_id = row
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
        got = dry_replay.answer(runner, str(name), msg.get("arg"))
    except dry_replay.NoQuery as e:
        raise BadRequest(404, "no-query", str(e)) from None
    except dry_replay.NotReplayable as e:
        raise BadRequest(409, "not-replayable", "the instance's journal does not replay "
                         f"with this code, so there is no state to answer from: {e}") from None
    except dry_replay.QueryFailed as e:
        raise BadRequest(422, "query-failed", str(e)) from None
    if got is None:
        return None
    value, position = got
    return {"result": value, "position": position}
