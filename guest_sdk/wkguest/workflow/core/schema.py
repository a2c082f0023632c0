"""The runner's tables, `_wk_wf*`: what `Store.init_schema` creates in each instance.

The statements are stored by SQLite as written (the triggers' text is in sqlite_master),
so a change of them is a change of the stored format.
"""

from __future__ import annotations

from . import stream
from .kinds import STEP_RETRYING

# One row once the instance has continued as new: how many runs it has begun (none: 1)
# and the previous run's id. A table of its own, not columns of _wk_wf, so that an
# instance made by an older SDK needs no ALTER: its first continue makes it.
RUNS = """CREATE TABLE IF NOT EXISTS _wk_wf_run (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        runs INTEGER NOT NULL,
        previous_run_id TEXT NOT NULL)"""

# A position's columns, which a group's branch row has too (groups/rows.py): its kind
# (kinds.py), what it recorded, a step's attempts and its pending attempt's cut (kinds.py's
# CUT_OPEN; format version 6, added to older tables by migration.py).
ENTRY_COLUMNS = """kind TEXT NOT NULL,
        name TEXT NOT NULL,
        result TEXT,
        attempts INTEGER NOT NULL DEFAULT 0,
        error TEXT,
        next_attempt_at INTEGER,
        wake_at INTEGER,
        event_seq INTEGER,
        updated_at INTEGER NOT NULL,
        cut TEXT"""

# The trace a run belongs to: one row, the current run's (spans.py).
TRACE = ("CREATE TABLE IF NOT EXISTS _wk_wf_trace (id INTEGER PRIMARY KEY CHECK (id = 1),"
         " run_id TEXT NOT NULL, traceparent TEXT NOT NULL)")

# Each attempt's history (attempt_history.py), made when an instance first needs it; its
# trigger forgets a position's attempts with its journal entry. One script, no
# parameters: the host and FakeBackend both run it as one call.
ATTEMPTS = (
    "/*wk:attempt-table*/ CREATE TABLE IF NOT EXISTS _wk_wf_attempt ("
    " pos INTEGER NOT NULL, idx INTEGER NOT NULL, attempt INTEGER NOT NULL,"
    " started_at INTEGER NOT NULL, ended_at INTEGER, outcome TEXT NOT NULL, error TEXT,"
    " fuel INTEGER, memory_grown INTEGER,"
    " PRIMARY KEY (pos, idx, attempt)) WITHOUT ROWID",
    "CREATE TRIGGER IF NOT EXISTS _wk_wf_attempt_forget AFTER DELETE ON _wk_wf_step"
    " BEGIN DELETE FROM _wk_wf_attempt WHERE pos = OLD.pos; END",
)

SCHEMA = (
    """CREATE TABLE IF NOT EXISTS _wk_wf (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        state TEXT NOT NULL,
        run_id TEXT NOT NULL,
        input TEXT NOT NULL,
        input_tagged INTEGER NOT NULL,
        output TEXT,
        output_tagged INTEGER NOT NULL DEFAULT 0,
        error TEXT,
        wake_at INTEGER,
        waiting_for TEXT,
        bad_runs INTEGER NOT NULL DEFAULT 0,
        retry_at INTEGER,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        finished_at INTEGER)""",
    f"""CREATE TABLE IF NOT EXISTS _wk_wf_step (
        pos INTEGER PRIMARY KEY,
        {ENTRY_COLUMNS})""",
    """CREATE TABLE IF NOT EXISTS _wk_wf_event (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        name TEXT NOT NULL,
        payload TEXT NOT NULL,
        tagged INTEGER NOT NULL,
        received_at INTEGER NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS _wk_wf_event_name ON _wk_wf_event (name, seq)",
    # A counted attempt's next_attempt_at is when the instance runs next if the attempt is
    # cut (a trap, a kill), so the status's wake_at follows it. A trigger does it in the
    # attempt's own statement: no second host call on the per-step path.
    f"""CREATE TRIGGER IF NOT EXISTS _wk_wf_attempt_wake AFTER INSERT ON _wk_wf_step
        WHEN NEW.kind = '{STEP_RETRYING}' BEGIN"""
    " UPDATE _wk_wf SET wake_at = NEW.next_attempt_at; END",
    f"""CREATE TRIGGER IF NOT EXISTS _wk_wf_attempt_rewake
        AFTER UPDATE OF attempts ON _wk_wf_step WHEN NEW.kind = '{STEP_RETRYING}'
        BEGIN UPDATE _wk_wf SET wake_at = NEW.next_attempt_at; END""",
    # The run chain of continue-as-new (RUNS, above: made here and at a continue, by
    # continuation.py).
    RUNS,
    # The emitted-event stream and the trigger that journals each emit (stream.py).
    *stream.SCHEMA,
    # Each attempt's history (attempt_history.py), which an instance made by an older
    # SDK gets when it first needs it.
    *ATTEMPTS,
    # The trace a run belongs to (spans.py; version 8): made here, so that a traced run's
    # first write of it changes no schema; an older instance gets it from its first one.
    TRACE,
)
