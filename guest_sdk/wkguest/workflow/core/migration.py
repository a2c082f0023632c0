"""Format version 6, once per instance made before it: the `cut` column of `_wk_wf_step`
and `_wk_wf_branch` (kinds.py's CUT_OPEN), set from the texts that said it before.

Until version 5 whether a pending attempt was cut was told by its row's `error` alone:
the error it was counted with (kinds.py's COUNTED) while it had not ended, and
"attempt n was cut: <reason>" once a run had noted the host's reason (a branch's only as
its group's rows were loaded, from the instance's "its last event was cut: <reason>").
This is the one place those texts are read: each open attempt gets CUT_OPEN, each noted
cut its kind ("narrowed-deadline" for the deadline its step timeout narrowed, else
"unknown": the text kept no kind), and a noted cut its history row, which the runner now
writes as it notes the cut (cuts.py). One script, in one transaction.

The check is one query per Store (so per warm cache, before its first load or status);
a Store whose on-init made the tables (`Store.init_schema`) needs none.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...reasons import NARROWED_REASON
from ..backend import TRAP_NARROWED_DEADLINE, TRAP_UNKNOWN, Backend
from .kinds import COUNTED, CUT_BECAUSE, CUT_OPEN, STEP_RETRYING, WAS_CUT, per_attempt
from .schema import ATTEMPTS

# The step table's columns (PRAGMA table_info's rows: the name is the second): made with
# `cut`, or migrated in one transaction with the branch table, if there is one.
COLUMNS = "PRAGMA table_info(_wk_wf_step)"
_BRANCHES = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_wk_wf_branch'"

Rows = Callable[[str], list[list[Any]]]  # Store.rows

_COUNTED, _BECAUSE = per_attempt(COUNTED), per_attempt(CUT_BECAUSE)
_NARROWED = _BECAUSE + " || '" + NARROWED_REASON.replace("'", "''") + "'"
_OPEN = f"kind = '{STEP_RETRYING}' AND attempts > 0"


def _kinds(table: str) -> str:
    return (f"UPDATE {table} SET cut = CASE WHEN error = {_COUNTED} THEN '{CUT_OPEN}'"
            f" WHEN substr(error, 1, length({_NARROWED})) = {_NARROWED}"
            f" THEN '{TRAP_NARROWED_DEADLINE}'"
            f" WHEN substr(error, 1, length({_BECAUSE})) = {_BECAUSE} THEN '{TRAP_UNKNOWN}'"
            f" END WHERE {_OPEN}")


def _history(table: str, idx: str) -> str:
    return (f"INSERT OR IGNORE INTO _wk_wf_attempt (pos, idx, attempt, started_at, outcome,"
            f" error) SELECT pos, {idx}, attempts, updated_at, CASE cut WHEN"
            f" '{TRAP_NARROWED_DEADLINE}' THEN 'timed-out' ELSE 'cut' END,"
            f" substr(error, length({_BECAUSE}) + 1) FROM {table}"
            f" WHERE {_OPEN} AND cut IS NOT NULL AND cut != '{CUT_OPEN}'")


# A branch's cut that version 5 had not yet noted on its row (the group's rows not loaded
# since): noted as its load would have.
_BRANCH_NOTE = (
    f"UPDATE _wk_wf_branch SET error = {_BECAUSE} || substr((SELECT error FROM _wk_wf),"
    f" {len(WAS_CUT) + 1}) WHERE {_OPEN} AND error = {_COUNTED}"
    " AND pos = (SELECT max(pos) FROM _wk_wf_step)"
    f" AND (SELECT substr(error, 1, {len(WAS_CUT)}) FROM _wk_wf) = '{WAS_CUT}'")

_STEPS = [_kinds("_wk_wf_step"), _history("_wk_wf_step", "-1")]
_BRANCHES_ROWS = [_BRANCH_NOTE, _kinds("_wk_wf_branch"), _history("_wk_wf_branch", "idx")]


def script(branches: bool, alter: bool = True) -> str:
    """The migration of the step table, and of the branch table if `branches`; without
    `alter`, of rows written as version 5 wrote them into tables that have the column
    (a history document's, testing/history.py)."""
    body = [ATTEMPTS[0].removeprefix("/*wk:attempt-table*/ "), ATTEMPTS[1]]
    body += ["ALTER TABLE _wk_wf_step ADD COLUMN cut TEXT"] * alter + _STEPS
    if branches:
        body += ["ALTER TABLE _wk_wf_branch ADD COLUMN cut TEXT"] * alter + _BRANCHES_ROWS
    return "/*wk:migrate-6*/ BEGIN; " + "; ".join(body) + "; COMMIT"


def migrate(db: Backend, rows: Rows) -> None:
    """Bring the instance's tables to version 6, if an older runner made them."""
    columns = {str(r[1]) for r in rows(COLUMNS)}
    if columns and "cut" not in columns:  # no table: on-init makes it with the column
        db.exec(script(bool(rows(_BRANCHES))))
