"""A workflow class whose steps book entries in the instance's own table, each in its
step's transaction (`tx=`), for the tx crash tests (tests/e2e/test_workflow_tx.py).

Input: {"entries": [[entry, amount], ...]}. Each entry is one tx step, "book <entry>",
which inserts a row (the statement tagged /*app:effect*/, a crash point) and returns the
ledger's total so far; a last tx step counts the rows of each entry. A repeated effect
would show as a count above 1, and as a total that is off.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from wkguest import workflow

LEDGER = workflow.Tables("""
    CREATE TABLE IF NOT EXISTS ledger (seq INTEGER PRIMARY KEY, entry TEXT NOT NULL,
                                       amount INTEGER NOT NULL)
""")


def _book(entry: str, amount: int) -> Callable[[workflow.TxDb], Any]:
    def book(db: workflow.TxDb) -> Any:
        db.exec("/*app:effect*/ INSERT INTO ledger (entry, amount) VALUES (?, ?)",
                (entry, amount))
        return db.scalar("SELECT sum(amount) FROM ledger")
    return book


def _counts(db: workflow.TxDb) -> Any:
    return db.query("SELECT entry, count(*) FROM ledger GROUP BY entry ORDER BY entry")


def bookings(wf: workflow.Run, inp: Any) -> Any:
    totals = [wf.step(f"book {e}", _book(e, a), tx=LEDGER) for e, a in inp["entries"]]
    return {"totals": totals, "counts": wf.step("count", _counts, tx=True)}


Handler = workflow.serve(bookings, workflow.Config(retention_ms=3_600_000))
