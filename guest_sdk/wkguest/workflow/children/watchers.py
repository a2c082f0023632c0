"""The instances that wait for this one to finish without being its parent
(`wf.wait_for_workflow`, awaited.py): who they are, and the notice each is owed.

    _wk_wf_watcher  one row per waiting instance (class, id): its notice not yet sent
                    (0), delivered (1) or given up (2), with the tries so far

The watch route adds a row (a durable write: a watcher told "watching" is never
forgotten). When this instance finishes, each watcher is owed the notice a child owes
its parent (notices.py: the same child-done route, body and delivery rules, sent by
the same drain), so the watcher's wait takes it as it takes a child's. Made with CREATE
TABLE IF NOT EXISTS at the first watch: most instances are never awaited. A
continue-as-new keeps it (only the journal starts again): a watcher waits for the
instance's last run.
"""

from __future__ import annotations

import json
from typing import Any

from ..backend import Backend
from ..core.instance import FINISHED_SQL
from ..errors import StoreFault

WATCHERS = "_wk_wf_watcher"
OWED, DELIVERED, GIVEN_UP = 0, 1, 2

_TABLE = f"""CREATE TABLE IF NOT EXISTS {WATCHERS} (
        cls TEXT NOT NULL,
        id TEXT NOT NULL,
        notice INTEGER NOT NULL DEFAULT 0,
        tries INTEGER NOT NULL DEFAULT 0,
        next_try_at INTEGER,
        error TEXT,
        PRIMARY KEY (cls, id)) WITHOUT ROWID"""
_ADD = (f"/*wk:watch*/ INSERT INTO {WATCHERS} (cls, id) VALUES (?, ?)"
        " ON CONFLICT (cls, id) DO NOTHING")
# Each notice owed once the instance has finished, with what it says.
_OWED = ("SELECT v.cls, v.id, v.tries, v.next_try_at, w.run_id, w.state, w.output,"
         f" w.output_tagged, w.error FROM {WATCHERS} AS v, _wk_wf AS w"
         f" WHERE v.notice = {OWED} AND w.state IN ({FINISHED_SQL})")


def add(db: Backend, cls: str, id: str) -> None:
    """Instance `cls`/`id` waits for this one to finish: noted, durably."""
    db.exec(_TABLE)
    db.exec_durable(_ADD, (cls, id))


def owed(db: Backend) -> list[list[Any]]:
    """(class, id, tries, next try at, run id, state, output, tagged, error) of each
    notice owed to a watcher."""
    try:
        return list(json.loads(db.query_packed(_OWED, ()))[1:])
    except ValueError:
        raise StoreFault("query-packed returned malformed JSON") from None


def done(db: Backend, cls: str, id: str, state: int, tries: int, next_try_at: int | None,
         error: str | None) -> None:
    # A plain write: if it is lost, the notice is sent again, and the watcher ignores
    # a duplicate (registry.py's take_notice).
    db.exec(f"UPDATE {WATCHERS} SET notice = ?, tries = ?, next_try_at = ?, error = ?"
            " WHERE cls = ? AND id = ?", (state, tries, next_try_at, error, cls, id))
