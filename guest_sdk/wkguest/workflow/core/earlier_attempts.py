"""The attempts an operator's move took away: `_wk_wf_attempt_earlier`, one row per
attempt of a position that a restart from a step, or a rescue of a failed step, removed
(format version 10).

    seq            1, 2, ...: the order the rows were kept in (the bound drops the lowest)
    run_id         the run the attempt belonged to: only the current run's are shown
    move           'restart' or 'rescue': the move that removed its position
    moved_at       host clock, ms: when that move was made
    pos, name      its position and that position's name, as the journal had them
                   (`_wk_wf_step.name`, a child's with its U+0002): shown only under a
                   position of the same number and name, so that code that now reaches
                   another call at that number is not shown attempts of the old one
    idx, branch    -1 and NULL for a step's own attempt; a group's branch: its index and
                   its name
    attempt ...    the `_wk_wf_attempt` row's columns as they were, and the attempt's
                   `_wk_wf_attempt_traceback` (NULL for none)

The rows are copied in the restart's own transaction, before it deletes the positions
(whose trigger forgets their attempts): see rewind.py. A pending attempt cut with no
reason noted (`cut` = 'open'), which has no history row yet, is kept as the steps route
shows it: `cut`, from its position's row. The table holds at most MAX_ROWS rows: each
restart drops the oldest past it, and the rows of any other run (a continue-as-new's,
whose positions are numbered anew). A restart from the start empties it (a new run).
Nothing on a step's path reads or writes it: only a restart, and the steps route.

The first restart from a step makes the table (CREATE TABLE IF NOT EXISTS in its batch),
so an instance made by an older SDK needs no migration, and an older runner ignores it.
"""

from __future__ import annotations

from typing import Any

from ..backend import Param
from .kinds import CUT_OPEN, STEP_RETRYING
from .store import Store

TABLE = "_wk_wf_attempt_earlier"
MAX_ROWS = 1000  # kept per instance, across its restarts: the latest
MAX_SHOWN = 100  # per position in one answer of the steps route: its latest
MAX_ERROR = 500  # characters of an error shown (as attempt_history.py's)
MAX_PAGE_CHARS = 64 * 1024  # of their tracebacks in one answer, the latest first

MAKE = (f"CREATE TABLE IF NOT EXISTS {TABLE} (seq INTEGER PRIMARY KEY,"
        " run_id TEXT NOT NULL, move TEXT NOT NULL, moved_at INTEGER NOT NULL,"
        " pos INTEGER NOT NULL,"
        " name TEXT NOT NULL, idx INTEGER NOT NULL, branch TEXT, attempt INTEGER NOT NULL,"
        " started_at INTEGER NOT NULL, ended_at INTEGER, outcome TEXT NOT NULL, error TEXT,"
        " fuel INTEGER, memory_grown INTEGER, traceback TEXT)")

_ATTEMPT = "attempt, started_at, ended_at, outcome, error, fuel, memory_grown"
_COLUMNS = f"pos, idx, {_ATTEMPT}"
# A pending attempt cut with no reason noted: as attempt_history.py shows it.
_OPEN = ("SELECT pos, {idx}, attempts, updated_at, NULL, 'cut', error, NULL, NULL FROM {table}"
         f" WHERE pos >= ?2 AND kind = '{STEP_RETRYING}' AND cut = '{CUT_OPEN}'"
         " AND attempts > 0")
# The bound: the latest MAX_ROWS of the current run.
_BOUND = (f"/*wk:earlier-bound*/ DELETE FROM {TABLE} WHERE run_id <> (SELECT run_id FROM _wk_wf)"
          f" OR seq NOT IN (SELECT seq FROM {TABLE} ORDER BY seq DESC LIMIT {MAX_ROWS})")

Statement = tuple[str, tuple[Param, ...]]


def keep(pos: int, move: str, at: int, tables: set[str]) -> list[Statement]:
    """The statements that keep the attempts of positions `pos` on, removed by `move`
    ('restart' or 'rescue') made at `at`, to run before the positions are deleted
    (`tables`: which of the attempt, traceback and branch tables the instance has). None
    without a history."""
    if "_wk_wf_attempt" not in tables:
        return []
    branches = "_wk_wf_branch" in tables
    source = [f"SELECT {_COLUMNS} FROM _wk_wf_attempt WHERE pos >= ?2",
              _OPEN.format(idx=-1, table="_wk_wf_step")]
    if branches:
        source.append(_OPEN.format(idx="idx", table="_wk_wf_branch"))
    branch = ("(SELECT b.name FROM _wk_wf_branch b WHERE b.pos = a.pos AND b.idx = a.idx)"
              if branches else "NULL")
    traceback = ("(SELECT t.traceback FROM _wk_wf_attempt_traceback t WHERE t.pos = a.pos"
                 " AND t.idx = a.idx AND t.attempt = a.attempt)"
                 if "_wk_wf_attempt_traceback" in tables else "NULL")
    # The latest MAX_ROWS, inserted oldest first: the bound drops the lowest seq first.
    copy = (f"/*wk:earlier-keep*/ INSERT INTO {TABLE} (run_id, move, moved_at, pos, name,"
            f" idx, branch, {_ATTEMPT}, traceback) SELECT (SELECT run_id FROM _wk_wf), ?3, ?1,"
            " pos,"
            f" name, idx, branch, {_ATTEMPT}, traceback"
            f" FROM (SELECT a.*, s.name, {branch} AS branch, {traceback} AS traceback"
            f" FROM ({' UNION ALL '.join(source)}) AS a JOIN _wk_wf_step s ON s.pos = a.pos"
            f" ORDER BY a.pos DESC, a.idx DESC, a.attempt DESC LIMIT {MAX_ROWS})"
            " ORDER BY pos, idx, attempt")
    return [(MAKE, ()), (copy, (at, pos, move)), (_BOUND, ())]


def forget() -> Statement:
    """A restart from the start: a new run keeps none."""
    return (f"DELETE FROM {TABLE}", ())


# -- reading (the steps route) -----------------------------------------------------------

# The current run's rows of positions in [?1, ?2] whose number and name match a position
# of the journal: each position's latest ?4, with how many it has; the tracebacks of the
# latest rows first, up to ?5 characters in all.
_READ = (
    "SELECT pos, moved_at, move, idx, branch, attempt, started_at, ended_at, outcome,"
    " substr(error, 1, ?3), fuel, memory_grown, CASE WHEN upto <= ?5 THEN traceback END,"
    " total FROM (SELECT e.*, row_number() OVER (PARTITION BY e.pos ORDER BY e.seq DESC)"
    " AS rn, count(*) OVER (PARTITION BY e.pos) AS total,"
    " sum(length(e.traceback)) OVER (ORDER BY e.seq DESC) AS upto"
    f" FROM {TABLE} e JOIN _wk_wf_step s ON s.pos = e.pos AND s.name = e.name"
    " WHERE e.pos BETWEEN ?1 AND ?2 AND e.run_id = (SELECT run_id FROM _wk_wf))"
    " WHERE rn <= ?4 ORDER BY pos, seq"
)


def add(store: Store, page: list[dict[str, Any]], there: bool) -> None:
    """Each position's `earlier` (the attempts restarts took from it, oldest first) and
    `earlier_more` (how many older ones are left out), for the steps route's page;
    `there`: whether the instance has the table."""
    found = [] if not there else store.rows(_READ, (
        page[0]["pos"], page[-1]["pos"], MAX_ERROR, MAX_SHOWN, MAX_PAGE_CHARS))
    by_pos: dict[int, list[dict[str, Any]]] = {}
    more: dict[int, int] = {}
    for r in found:
        shown = by_pos.setdefault(r[0], [])
        shown.append(_map(r))
        more[r[0]] = r[13] - len(shown)
    for m in page:
        m["earlier"], m["earlier_more"] = by_pos.get(m["pos"], []), more.get(m["pos"], 0)


def _map(r: list[Any]) -> dict[str, Any]:
    _, at, move, idx, branch, n, started, ended, outcome, error, fuel, grown, tb, _ = r
    return {"move": move, "moved_at": at, "attempt": n, "branch": None if idx == -1 else idx,
            "name": branch, "started_at": started, "ended_at": ended,
            "duration_ms": None if ended is None else ended - started, "outcome": outcome,
            "error": error, "traceback": tb, "fuel": fuel, "memory_grown": grown}
