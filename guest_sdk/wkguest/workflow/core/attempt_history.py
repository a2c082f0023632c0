"""Each attempt's history: `_wk_wf_attempt`, one row per attempt of a step, of a step
branch of a group, or of a child's start in a group.

    pos, idx       the position, and the branch's index in its group (-1: the step itself)
    attempt        1, 2, ...: as the step's (or branch's) row counts its attempts
    started_at     host clock, ms: when the attempt was counted, before its function ran
    ended_at       when it ended; NULL for an attempt that was cut (a trap, a kill, the
                   event's budget), whose end the guest never saw
    outcome        'returned', 'failed' (it raised, or its value could not be recorded),
                   'timed-out' (it passed its step's timeout: it ended late, or it was
                   cut at the deadline the timeout narrowed; timeouts.py), or 'cut'
    error          the attempt's error as the step records one, or the cut's reason
    fuel           the fuel the attempt burnt (lifecycle's fuel-used, before and after);
                   NULL where the backend cannot tell
    memory_grown   how many bytes the guest's linear memory grew during the attempt; NULL
                   where the backend cannot tell (the host today)

A row is written when its attempt ends, with one plain write that the run's last durable
write syncs, as it syncs the step's result (a step's row rides in the same call to the
host as the step's record: carried.py): no fsync of its own, and no write before the
function runs (the step's row already counts the attempt, with its start time, before
it). An attempt that was cut has no end: the step's row still holds it (its attempts,
its updated_at, its `cut`). Its row is written when a run notes why (cuts.py), or else,
the host having said nothing (a kill), copied from the step's row when the next attempt
begins or the step gives up; until then the steps route shows it from the step's row.

The schema makes the table; an instance made by an older SDK has none until it first
needs it. Its trigger forgets a position's attempts with its journal
entry (continue-as-new, a restart), so the table never outgrows the journal; a restart
from a step first keeps them apart, bounded (earlier_attempts.py).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ..backend import Backend
from . import earlier_attempts, tracebacks
from .kinds import CUT_OPEN, STEP_RETRYING
from .schema import ATTEMPTS
from .store import Store

TABLE = "_wk_wf_attempt"
STEP = -1  # the idx of a step's own attempts (a branch's is its index in the group)

# The outcomes of an attempt (`outcome`): CUT is an attempt that never ended.
RETURNED, FAILED, CUT = "returned", "failed", "cut"
TIMED_OUT = "timed-out"  # an attempt that passed its step's timeout (timeouts.py)

_END = (f"/*wk:attempt-end*/ INSERT OR REPLACE INTO {TABLE} (pos, idx, attempt, started_at,"
        " ended_at, outcome, error, fuel, memory_grown) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)")
# A cut attempt the host said nothing of: its history row, from its step's (or branch's).
_CUT_STEP = (f"/*wk:attempt-cut*/ INSERT OR IGNORE INTO {TABLE} (pos, idx, attempt,"
             f" started_at, outcome, error) SELECT pos, {STEP}, attempts, updated_at, '{CUT}',"
             f" error FROM _wk_wf_step WHERE pos = ? AND kind = '{STEP_RETRYING}'"
             " AND attempts > 0")
_CUT_BRANCH = (f"/*wk:attempt-cut*/ INSERT OR IGNORE INTO {TABLE} (pos, idx, attempt,"
               f" started_at, outcome, error) SELECT pos, idx, attempts, updated_at, '{CUT}',"
               " error FROM _wk_wf_branch WHERE pos = ? AND idx = ?"
               f" AND kind = '{STEP_RETRYING}' AND attempts > 0")
# Attempt ?4's row, cut at the deadline its timeout narrowed: its error says so.
_TIMED_OUT = (f"/*wk:attempt-timed-out*/ UPDATE {TABLE} SET outcome = '{TIMED_OUT}',"
              " error = ?1 WHERE pos = ?2 AND idx = ?3 AND attempt = ?4 AND ended_at IS NULL")
_REASON = f"SELECT error FROM {TABLE} WHERE pos = ? AND idx = ? AND attempt = ?"

class Meter(NamedTuple):
    """An attempt under way: when it began, and the fuel and memory then."""

    pos: int
    idx: int
    attempt: int
    started_at: int
    fuel: int | None
    memory: int | None


class Attempts:
    """The attempt rows of one run, over its Store."""

    __slots__ = ("store", "db", "_fuel")

    def __init__(self, store: Store) -> None:
        self.store = store
        self.db: Backend = store.db
        # The fuel read when this run's last attempt ended: the next attempt's start, so
        # that a run of steps reads the meter once per attempt, not twice (what the run
        # does between two attempts, a journal append, counts to the second).
        self._fuel: int | None = None

    def ready(self) -> None:
        """Make the table, unless this Store knows it is there (it made the schema, or it
        made the table before: once per warm cache, not once per attempt)."""
        if not self.store.has_attempts:
            self.db.exec("; ".join(ATTEMPTS))
            self.store.has_attempts = True

    def clock(self) -> int:
        """The host's clock, for an attempt about to be counted. The run's first attempt
        reads the fuel in the same call: its meter's start (`begin`)."""
        if self._fuel is None:
            now, self._fuel = self.db.now_and_fuel()
            return now
        return self.db.now()

    def begin(self, pos: int, idx: int, attempt: int, now: int) -> Meter:
        """Attempt `attempt` begins (its row counted it at `now`): read the meters."""
        self.ready()
        fuel = self.db.fuel_used() if self._fuel is None else self._fuel
        return Meter(pos, idx, attempt, now, fuel, self.db.memory_bytes())

    def end(self, m: Meter, outcome: str, error: str | None, carry: bool,
            traceback: str | None = None) -> int:
        """The attempt `m` ended (returned or failed) now: its row, and the `traceback` of
        what it raised (tracebacks.py), written at once, or `carry`: with the Store's next
        write (the step's record, which follows at once). Returns the host's clock read
        for its end."""
        now, fuel = self.db.now_and_fuel()
        memory = self.db.memory_bytes()
        self._fuel = fuel
        row = (m.pos, m.idx, m.attempt, m.started_at, now, outcome, error,
               _grown(m.fuel, fuel), _grown(m.memory, memory))
        if traceback is None:  # a returned attempt's path: as it was before tracebacks
            if carry:
                self.store.carried.add(_END, row)
            else:
                self.db.exec(_END, row)
            return now
        writes = [(_END, row), *tracebacks.writes(m.pos, m.idx, m.attempt, traceback)]
        if carry:
            for sql, params in writes:
                self.store.carried.add(sql, params)
        else:
            self.db.exec_many(writes)
        return now

    def fuel_since(self, m: Meter) -> int | None:
        """The fuel burnt from attempt `m`'s start to the end just noted (`end`)."""
        return _grown(m.fuel, self._fuel)

    def cut(self, pos: int, idx: int, attempt: int, timed_out: str | None = None) -> None:
        """The step's (or branch `idx`'s) `attempt` was cut: its row, copied from the
        step's (or branch's) if no run noted the cut (cuts.py), before the next attempt's
        count or the final error writes over it. `timed_out`: it was cut at its narrowed
        deadline, and this is its error."""
        self.ready()
        if idx == STEP:
            self.db.exec(_CUT_STEP, (pos,))
        else:
            self.db.exec(_CUT_BRANCH, (pos, idx))
        if timed_out is not None:  # rare: one more write rather than a second copy query
            self.db.exec(_TIMED_OUT, (timed_out, pos, idx, attempt))

    def reason(self, pos: int, idx: int, attempt: int) -> str | None:
        """Why `attempt` was cut, as the run that noted it wrote (cuts.py), if one did."""
        self.ready()
        got = self.store.rows(_REASON, (pos, idx, attempt))
        return None if not got else got[0][0]


def _grown(before: int | None, after: int | None) -> int | None:
    return None if before is None or after is None else max(after - before, 0)


# -- reading (the steps route) -----------------------------------------------------------

MAX_HISTORY = 100  # attempts shown per position: its latest
MAX_HISTORY_ERROR = 500  # characters of an attempt's error shown in a history

_EXISTS = "SELECT name FROM sqlite_master WHERE type = 'table' AND name IN (?, ?, ?, ?)"
# The latest MAX_HISTORY attempts of each position in [?1, ?2], with how many it has.
_HISTORY = (
    "SELECT pos, idx, attempt, started_at, ended_at, outcome, substr(error, 1, ?3), fuel,"
    " memory_grown, total FROM (SELECT *, row_number() OVER"
    " (PARTITION BY pos ORDER BY idx DESC, attempt DESC) AS rn,"
    f" count(*) OVER (PARTITION BY pos) AS total FROM {TABLE} WHERE pos BETWEEN ?1 AND ?2)"
    " WHERE rn <= ?4 ORDER BY pos, idx, attempt"
)
_BRANCHES = ("SELECT pos, idx, kind, name, attempts, substr(error, 1, ?3), updated_at, cut"
             " FROM _wk_wf_branch WHERE pos BETWEEN ?1 AND ?2 ORDER BY pos, idx")
# A step's attempt cut with no run noting why: shown from its row.
_OPEN_STEPS = ("SELECT pos, attempts, substr(error, 1, ?3), updated_at FROM _wk_wf_step"
               f" WHERE pos BETWEEN ?1 AND ?2 AND kind = '{STEP_RETRYING}' AND cut = '{CUT_OPEN}'")
_VALUES = "SELECT pos, substr(result, 1, ?3) FROM _wk_wf_step WHERE pos BETWEEN ?1 AND ?2"


def tables(store: Store) -> set[str]:
    """Which of the attempt, traceback, branch and earlier attempt tables this instance
    has."""
    names = (TABLE, tracebacks.TABLE, "_wk_wf_branch", earlier_attempts.TABLE)
    return {str(r[0]) for r in store.rows(_EXISTS, names)}


def history(store: Store, first: int, last: int) -> list[list[Any]]:
    """The attempt rows of positions `first` to `last`, each position's latest
    MAX_HISTORY: [pos, idx, attempt, started_at, ended_at, outcome, error, fuel,
    memory_grown, total]."""
    return store.rows(_HISTORY, (first, last, MAX_HISTORY_ERROR, MAX_HISTORY))


def branches(store: Store, first: int, last: int) -> list[list[Any]]:
    """The branch rows of positions `first` to `last`: [pos, idx, kind, name,
    attempts, error, updated_at, cut]."""
    return store.rows(_BRANCHES, (first, last, MAX_HISTORY_ERROR))


def values(store: Store, first: int, last: int, chars: int) -> dict[int, str | None]:
    """The recorded results' JSON texts of positions `first` to `last`, each cut at
    `chars` characters (the caller cuts at bytes)."""
    return {int(r[0]): r[1] for r in store.rows(_VALUES, (first, last, chars))}


# -- the steps route's additions (events/routes.py) ------------------------------

MAX_HISTORY_PAGE = 100  # positions per page with their histories
DEFAULT_VALUE_BYTES = 200
MAX_VALUE_BYTES = 4096


def add_history(store: Store, page: list[dict[str, Any]], rows: list[list[Any]]) -> None:
    """Each position's `history` (its attempts, oldest first) and `history_more` (how
    many older ones are left out), for the steps route's page (`rows`: store.steps's);
    and its `earlier` attempts, which restarts took away (earlier_attempts.py). An
    attempt cut and not yet followed by another is shown from its row."""
    first, last = rows[0][0], rows[-1][0]
    have = tables(store)
    found = history(store, first, last) if TABLE in have else []
    brows = branches(store, first, last) if "_wk_wf_branch" in have else []
    names = {(b[0], b[1]): b[3] for b in brows}
    tbs = tracebacks.read(store, first, last) if tracebacks.TABLE in have else {}
    by_pos: dict[int, list[dict[str, Any]]] = {}
    shown: dict[int, int] = {}
    more: dict[int, int] = {}
    seen = set()
    for r in found:
        by_pos.setdefault(r[0], []).append(
            _attempt_map(r, names.get((r[0], r[1])), tbs.get((r[0], r[1], r[2]))))
        seen.add((r[0], r[1], r[2]))
        shown[r[0]] = shown.get(r[0], 0) + 1
        more[r[0]] = r[9] - shown[r[0]]
    open_rows = [] if not any(r[1] == STEP_RETRYING for r in rows) else [
        (r[0], STEP, None, r[1], r[2], r[3])
        for r in store.rows(_OPEN_STEPS, (first, last, MAX_HISTORY_ERROR))]
    open_rows += [(b[0], b[1], b[3], b[4], b[5], b[6]) for b in brows
                  if b[2] == STEP_RETRYING and b[7] == CUT_OPEN]
    for pos, idx, name, n, error, at in open_rows:
        if (pos, idx, n) not in seen:
            by_pos.setdefault(pos, []).append(_attempt_map(
                [pos, idx, n, at, None, CUT, error, None, None], name))
    for m in page:
        h = by_pos.get(m["pos"], [])
        h.sort(key=lambda a: (-1 if a["branch"] is None else a["branch"], a["attempt"]))
        m["history"], m["history_more"] = h, max(more.get(m["pos"], 0), 0)
    earlier_attempts.add(store, page, earlier_attempts.TABLE in have)


def _attempt_map(r: list[Any], name: str | None,
                 traceback: str | None = None) -> dict[str, Any]:
    pos, idx, n, started, ended, outcome, error, fuel, grown = r[:9]
    return {"attempt": n, "branch": None if idx == STEP else idx, "name": name,
            "started_at": started, "ended_at": ended,
            "duration_ms": None if ended is None else ended - started,
            "outcome": outcome, "error": error, "traceback": traceback, "fuel": fuel,
            "memory_grown": grown}


def add_values(store: Store, page: list[dict[str, Any]], cap: int) -> None:
    """Each position's recorded value, as its JSON text cut at `cap` bytes (at a
    character's boundary): `value` (None: none recorded) and `value_truncated`."""
    texts = values(store, page[0]["pos"], page[-1]["pos"], cap)
    for m in page:
        text = texts.get(m["pos"])
        if text is None:
            m["value"], m["value_truncated"] = None, False
            continue
        data = text.encode("utf-8")
        shown = data[:cap].decode("utf-8", "ignore") if len(data) > cap else text
        m["value"] = shown
        m["value_truncated"] = len(shown) < (m.get("result_bytes") or 0)
