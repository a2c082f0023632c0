"""Continue-as-new's SQL: the switch from one run to the next, and the run chain's read.

    _wk_wf_run    one row once the instance has continued as new: the number of runs
                  begun and the previous run's id (schema.py's RUNS)

The switch is one transaction, made durable by its COMMIT: the chain's row, the old
run's journal deleted, and the instance's row with the new run's id and input. A cut
anywhere before the COMMIT leaves the old run whole (its next event replays it and
continues again); after it, the new run alone. Neither the pending events
(_wk_wf_event), the emitted stream (_wk_wf_emit) nor the instance's own tables are
touched: they belong to the instance, not to a run.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any

from ..backend import Backend, Param
from ..errors import StoreFault
from .schema import RUNS

_CHAIN = ("/*wk:can-chain*/ INSERT INTO _wk_wf_run (id, runs, previous_run_id)"
          " SELECT 1, 2, run_id FROM _wk_wf WHERE true ON CONFLICT (id) DO UPDATE SET"
          " runs = runs + 1, previous_run_id = excluded.previous_run_id")
_NEW_RUN = ("/*wk:can-run*/ UPDATE _wk_wf SET run_id = ?, input = ?, input_tagged = ?,"
            " state = 'running', wake_at = ?, waiting_for = NULL, bad_runs = 0,"
            " retry_at = NULL, error = NULL, updated_at = ?")
RUNS_COLUMNS = ", (SELECT runs FROM _wk_wf_run), (SELECT previous_run_id FROM _wk_wf_run)"
_EXISTS = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_wk_wf_run'"

Rows = Callable[[str], list[list[Any]]]


class RunChain:
    """`known`: whether the table is known to exist (None: not asked yet)."""

    __slots__ = ("db", "known")

    def __init__(self, db: Backend) -> None:
        self.db = db
        self.known: bool | None = None

    def switch(self, run_id: str, text: str, tagged: bool, now: int,
               durable: Callable[[str, tuple[Param, ...]], int],
               first: Sequence[tuple[str, Sequence[Param]]] = ()) -> None:
        """Begin run `run_id` with input `text` in place of the current one (see the
        module's doc). `first`: statements of the same transaction, run before the old
        journal goes (an operator's restart from the start: operator/moves.py). Raises StoreFault;
        nothing is changed then."""
        self.db.exec("/*wk:can-begin*/ BEGIN IMMEDIATE")
        try:
            for sql, params in first:
                self.db.exec(sql, params)
            self.db.exec("/*wk:can-table*/ " + RUNS)  # an older SDK's instance has none
            self.db.exec(_CHAIN)
            self.db.exec("/*wk:can-clear*/ DELETE FROM _wk_wf_step")
            self.db.exec(_NEW_RUN, (run_id, text, int(tagged), now, now))
            durable("/*wk:can-commit*/ COMMIT", ())
        except BaseException:
            with contextlib.suppress(StoreFault):  # else the host rolls it back
                self.db.exec("ROLLBACK")
            raise
        self.known = True

    def status_rows(self, rows: Rows, columns: str, rest: str) -> list[list[Any]]:
        """The status query `SELECT columns ... rest` with the run count and previous
        run id appended (None, None for an instance that has no chain table)."""
        if self.known is not False:
            try:
                return rows(columns + RUNS_COLUMNS + rest)
            except StoreFault:
                if self.known or self._exists():
                    raise
        return [[*r, None, None] for r in rows(columns + rest)]

    def _exists(self) -> bool:
        self.known = self.db.query_row(_EXISTS) is not None
        return self.known
