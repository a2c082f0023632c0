"""Debounce (issue 47): a start with `debounce_ms` begins its instance once that window has
passed with no newer debounced start of the same id, with the newest input.

The instance's id is the debounce key: each start of it with a window, while its first
run has not begun, replaces its input and moves its beginning to now + the window; once
the window has passed, it runs as any instance, and a debounced start then finds it as a
plain start does (`created: false`). A start without a window finds a debouncing instance
as it is, and leaves it debouncing.

A debouncing instance is one whose first run is held back as a bad run's backoff holds a
run back: `retry_at` set, no bad run counted, nothing recorded (the runner's `on_alarm`
sets its alarm to `retry_at` and runs nothing before: no new check on any run's path).
Its status says `running`, waking at the window's end. The creation and each
replacement are one durable transaction, their alarm set first: a cut before the COMMIT
leaves the instance as it was (or none), and its alarm then finds it so.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .backend import atomically
from .core import counted
from .core.instance import StatusRow
from .core.requests import BadRequest, int_field
from .core.runner import Runner

MAX_WINDOW_MS = 30 * 86_400_000
_BEGIN, _COMMIT = "/*wk:debounce-begin*/ BEGIN IMMEDIATE", "/*wk:debounce-commit*/ COMMIT"

_HOLD = ("/*wk:debounce*/ UPDATE _wk_wf SET retry_at = ?, wake_at = ?, updated_at = ?"
         " WHERE state = 'running'")
_REPLACE = ("/*wk:debounce*/ UPDATE _wk_wf SET input = ?, input_tagged = ?, retry_at = ?,"
            " wake_at = ?, updated_at = ? WHERE state = 'running' AND bad_runs = 0"
            " AND retry_at IS NOT NULL AND NOT EXISTS (SELECT 1 FROM _wk_wf_step)")


def window_of(msg: dict[str, Any]) -> int | None:
    """The start's `debounce_ms`, checked (1 ms to 30 days); None without one."""
    if msg.get("debounce_ms") is None:
        return None
    ms = int_field(msg, "debounce_ms", 0)
    if not 0 < ms <= MAX_WINDOW_MS:
        raise BadRequest(400, "bad-request", "'debounce_ms' must be 1 to "
                         f"{MAX_WINDOW_MS} ms (30 days)")
    return ms


def create(runner: Runner, create: Callable[[], StatusRow | None], window_ms: int
           ) -> StatusRow | None:
    """`create()` the instance held back until now + `window_ms`, in one transaction."""
    db = runner.db
    until = db.now() + window_ms

    def held() -> StatusRow | None:
        row = create()  # its alarm to now, then its insert
        db.alarm_set(until)
        db.exec(_HOLD, (until, until, db.now()))
        if row is not None:
            row.wake_at = until
        return row

    return atomically(runner.db, held, _BEGIN, _COMMIT)


def replace(runner: Runner, text: str, tagged: bool, window_ms: int) -> int | None:
    """Give a debouncing instance `text` as its input and move its beginning to now +
    `window_ms`: that time, or None if the instance is not debouncing (nothing changed:
    its first run has begun, or it never debounced)."""
    db = runner.db
    until = db.now() + window_ms

    def moved() -> bool:
        changed = db.exec(_REPLACE, (text, int(tagged), until, until, db.now())) > 0
        if changed:
            db.alarm_set(until)
        return changed

    if not atomically(db, moved, _BEGIN, _COMMIT):
        return None
    runner.forget()  # the warm journal holds the input it replaced
    counted.debounced(db)
    return until

