"""A saga whose steps book entries in the instance's own table and whose compensations
undo them, each in its step's transaction (`tx=`), for the compensation crash tests
(tests/e2e/test_workflow_saga.py).

Input: {"entries": [[entry, amount], ...], "wait": bool}. Each entry is a tx step,
"book <entry>", which inserts (entry, +amount) (tagged /*app:effect*/) and carries its
compensation, a tx step that inserts (entry, -amount) (tagged /*app:undo*/, a crash
point). With "wait", the saga then waits a day for the event "go" (a cancel with
compensation stops it there). Then the step "charge" is declined for good, so the saga
fails and its compensations run, newest first. A repeated effect or undo would show as a
second row.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from wkguest import workflow

DAY_MS = 86_400_000
LEDGER = workflow.Tables("""
    CREATE TABLE IF NOT EXISTS ledger (seq INTEGER PRIMARY KEY, entry TEXT NOT NULL,
                                       delta INTEGER NOT NULL)
""")


def _write(entry: str, delta: int, tag: str) -> Callable[[workflow.TxDb], Any]:
    def write(db: workflow.TxDb) -> Any:
        db.exec(f"/*{tag}*/ INSERT INTO ledger (entry, delta) VALUES (?, ?)", (entry, delta))
        return db.scalar("SELECT sum(delta) FROM ledger")
    return write


def _declined() -> Any:
    raise workflow.NonRetryable("card declined")


def saga(wf: workflow.Run, inp: Any) -> Any:
    for entry, amount in inp["entries"]:
        undo = workflow.Compensation(_write(entry, -amount, "app:undo"), tx=LEDGER,
                                     backoff_ms=1000)
        wf.step(f"book {entry}", _write(entry, amount, "app:effect"), tx=LEDGER,
                compensate=undo)
    if inp.get("wait"):
        wf.wait_for_event("go", DAY_MS)
    wf.step("charge", _declined)
    return "never"


Handler = workflow.serve(saga, workflow.Config(retention_ms=3_600_000))
