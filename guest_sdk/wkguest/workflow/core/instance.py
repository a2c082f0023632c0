"""The instance as the runner reads it: its states, the one query that loads it with its
journal's new positions (`LOAD`, into `Loaded`), and its status (`STATUS`, into
`StatusRow`). The statements run in store.py (and extend.py's reads of libraries over
workflows)."""

from __future__ import annotations

from dataclasses import dataclass

from .kinds import PENDING_KINDS, STEP_RETURNED, UPDATE_EVENT, Pending, sql_list
from .mocks import THERE as TEST_TABLE

FINISHED = frozenset({"completed", "failed", "cancelled", "terminated"})
# As SQL's `IN (...)` list: a statement that must not touch a finished instance.
FINISHED_SQL = "'completed', 'failed', 'cancelled', 'terminated'"
# Not finished, but nothing of its own moves it on (status.py's RESTING_STATES): its row
# is written only by an operator's move (cancel, rescue, ...: operator/moves.py), so its
# updated_at is when it parked, or was paused. Neither holds an alarm.
PARKED = "parked"
PAUSED = "paused"
HELD = frozenset({PARKED, PAUSED})
RESTING = FINISHED | HELD

# The journal since position ?1, as one row, in the split form of replay-floor.md: kinds
# concatenated, keys joined by U+001E, results as one JSON array. A key is the name of a
# step that returned a plain value (STEP_RETURNED, the hot path of replay), and U+0001 +
# the name for any other kind: names hold no control character, so one compare of key and
# name checks both the name and the kind. The ORDER BY sits in a subquery, not in the
# aggregate: `group_concat(x ORDER BY pos)` needs SQLite 3.44 and
# costs the host a temp b-tree, while SQLite does not flatten an ordered subquery into an
# aggregate, so rows reach group_concat in pos order (tests check it on both SQLites).
# The pending entry, if any, is always the last position; it comes apart as JSON. The
# last two elements are probes of the schema: whether the step table has `cut`
# (migration.py), and whether a test set mocks (mocks.py: 1, else null). The last counts
# the updates waiting in the inbox (updates/inbox.py), by the events' index.
#
# Three columns, read typed (`query_row`), not through query-packed: the keys and the
# results are big texts full of characters JSON escapes (a U+001E per key, the quotes of
# every result), and unescaping them again in the guest was a large part of a fresh long
# journal's load. The small rest travels as one JSON array, because each typed column
# adds to the crossing's cost (docs/performance.md).
# An accepted update's inbox row is an event of a reserved name (kinds.UPDATE_EVENT).
_UPDATE_EVENT = f"char({ord(UPDATE_EVENT[0])}) || '{UPDATE_EVENT[1:]}'"
_UPDATES_WAITING = f"(SELECT count(*) FROM _wk_wf_event WHERE name = {_UPDATE_EVENT})"

LOAD = f"""
SELECT json_array(w.state, w.run_id, w.bad_runs, w.retry_at, w.wake_at, w.waiting_for,
                  w.finished_at, w.error, CASE WHEN w.run_id = ?2 THEN NULL ELSE w.input END,
                  w.input_tagged, j.c, j.k,
                  json((SELECT json_array(pos, kind, name, attempts, next_attempt_at,
                                          wake_at, error)
                          FROM _wk_wf_step WHERE pos = (SELECT max(pos) FROM _wk_wf_step)
                           AND kind IN ({sql_list(PENDING_KINDS)}))),
                  (SELECT instr(sql, ' cut TEXT') > 0 FROM sqlite_master
                    WHERE type = 'table' AND name = '_wk_wf_step'),
                  {TEST_TABLE}, {_UPDATES_WAITING}),
       j.n, j.r
FROM _wk_wf AS w,
     (SELECT count(*) AS c, group_concat(kind, '') AS k,
             group_concat(CASE kind WHEN '{STEP_RETURNED}' THEN name ELSE char(1) || name END,
                          char(30)) AS n,
             '[' || group_concat(result, ',') || ']' AS r
        FROM (SELECT kind, name, result FROM _wk_wf_step
               WHERE pos >= (CASE WHEN (SELECT run_id FROM _wk_wf) = ?2 THEN ?1 ELSE 0 END)
                 AND kind NOT IN ({sql_list(PENDING_KINDS)})
               ORDER BY pos)) AS j
"""

# What libraries over workflows read (extend.py): when the instance was created, and the
# attempts a journal position recorded.
CREATED = "SELECT created_at FROM _wk_wf"
ATTEMPTS_AT = "SELECT attempts FROM _wk_wf_step WHERE pos = ?"

STATUS = f"""
SELECT state, run_id, wake_at, waiting_for, output, output_tagged, error, created_at,
       updated_at, finished_at,
       (SELECT coalesce(max(pos) + 1, 0) FROM _wk_wf_step),
       (SELECT count(*) FROM _wk_wf_event WHERE name <> {_UPDATE_EVENT}),
       {_UPDATES_WAITING}"""
STATUS_FROM = " FROM _wk_wf"


@dataclass
class Loaded:
    """What one event reads first, in one query."""

    state: str
    run_id: str
    bad_runs: int
    retry_at: int | None
    wake_at: int | None
    waiting_for: str | None
    finished_at: int | None
    error: str | None
    input: str | None  # None: the caller's cached input is still this run's
    input_tagged: bool
    since: int  # the position the journal delta starts at
    count: int
    kinds: str
    keys: str
    results: str
    pending: Pending | None
    tested: bool = False  # a test set mocks (mocks.py's table is there)
    updates_waiting: int = 0  # accepted updates no run has taken yet (updates/inbox.py)


@dataclass
class StatusRow:
    """The instance's row as its status reads it (`STATUS`), with its journal's length
    and the events not yet taken."""

    state: str
    run_id: str
    wake_at: int | None
    waiting_for: str | None
    output: str | None
    output_tagged: bool
    error: str | None
    created_at: int
    updated_at: int
    finished_at: int | None
    positions: int
    events_pending: int
    updates_pending: int = 0  # accepted updates no run has taken yet (updates/inbox.py)
    runs: int = 1  # runs begun under this id (continue-as-new): 1 for the first
    previous_run_id: str | None = None
