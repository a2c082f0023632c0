"""The steps route of wk-workflow/v1: the journal as operators see it, a page at a time,
with each position's attempts (attempt_history.py) and its recorded value if asked.
docs/workflow-protocol.md has the maps."""

from __future__ import annotations

from typing import Any

from .attempt_history import (
    DEFAULT_VALUE_BYTES,
    MAX_HISTORY_PAGE,
    MAX_VALUE_BYTES,
    add_history,
    add_values,
)
from .kinds import STEP_RETRYING, WAIT, call_of, shown, state_of
from .requests import BadRequest, bool_field, int_field
from .store import Store

MAX_STEPS_PAGE = 500
_STEPS = ("SELECT pos, kind, name, attempts, error, next_attempt_at, wake_at, length(result),"
          " event_seq, updated_at FROM _wk_wf_step WHERE pos >= ? ORDER BY pos LIMIT ?")


def steps(store: Store, msg: dict[str, Any]) -> dict[str, Any]:
    """The steps route: the recorded positions from `from`, `limit` at a time; with
    `attempts`, each one's history, and with `values`, its recorded value's JSON text cut
    at `value_bytes` (attempt_history.py)."""
    start = int_field(msg, "from", 0)
    with_attempts, with_values = bool_field(msg, "attempts"), bool_field(msg, "values")
    cap = int_field(msg, "value_bytes", DEFAULT_VALUE_BYTES)
    if not 1 <= cap <= MAX_VALUE_BYTES:
        raise BadRequest(400, "bad-request",
                         f"'value_bytes' must be from 1 to {MAX_VALUE_BYTES}")
    page_max = MAX_HISTORY_PAGE if with_attempts else MAX_STEPS_PAGE
    limit = min(max(int_field(msg, "limit", 100), 1), page_max)
    rows = store.rows(_STEPS, (start, limit + 1))
    more = len(rows) > limit
    page = [_step_map(r) for r in rows[:limit]]
    if page and with_attempts:
        add_history(store, page, rows[:limit])
    if page and with_values:
        add_values(store, page, cap)
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
