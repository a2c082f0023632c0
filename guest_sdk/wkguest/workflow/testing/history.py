"""Recorded histories: export an instance's tables, seed a fresh one, replay it.

A history is a JSON document (the golden files of tests/unit/workflow/golden are these):

    {"format": "wk-workflow-history/1", "now": <ms>, "note": "...",
     "instance": {<the _wk_wf row>}, "steps": [{<_wk_wf_step rows>}], "events": [...]}

`replay(fn, history)` runs one on_alarm over it on a fresh runner (a cold cache), at the
history's "now", and returns the status it then reports: what a deploy of `fn` would do
to an instance with that history. Recorded positions never call their step functions,
so a test can pass functions that raise if called.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .. import cbor
from ..core import migration
from ..core.config import Config
from ..core.store import Store
from ..protocol import Protocol
from ..runner import Runner, Workflow
from ..status import PREFIX, Status
from .fakes import FakeBackend, FakeClock

FORMAT = "wk-workflow-history/1"
# A history document keeps the rows as format version 5 wrote them: a pending attempt's
# cut is in its error's words, and `seed` sets the column from them, as the migration of
# an older instance does (core/migration.py).
LEFT_OUT = ("cut",)
TABLES = {"instance": ("_wk_wf", "id"), "steps": ("_wk_wf_step", "pos"),
           "events": ("_wk_wf_event", "seq")}


def export_history(backend: FakeBackend, note: str = "") -> dict[str, Any]:
    """The instance's tables as a history document (JSON-able)."""
    doc: dict[str, Any] = {"format": FORMAT, "now": backend.clock.now(), "note": note}
    for key, (table, order) in TABLES.items():
        cur = backend.conn.execute(f"SELECT * FROM {table} ORDER BY {order}")
        cols = [d[0] for d in cur.description]
        doc[key] = [{c: v for c, v in zip(cols, row, strict=True) if c not in LEFT_OUT}
                    for row in cur.fetchall()]
    doc["instance"] = doc["instance"][0] if doc["instance"] else None
    return doc


def seed(doc: dict[str, Any], clock: FakeClock | None = None) -> FakeBackend:
    """A fresh FakeBackend holding the history's tables, its clock at the history's now.
    Raises ValueError for another format."""
    if doc.get("format") != FORMAT:
        raise ValueError(f"not a {FORMAT} document: {doc.get('format')!r}")
    backend = FakeBackend(clock or FakeClock(doc["now"]))
    Store(backend).init_schema()
    rows = {"instance": [doc["instance"]] if doc["instance"] else [],
            "steps": doc["steps"], "events": doc["events"]}
    for key, (table, _) in TABLES.items():
        insert_rows(backend, table, rows[key])
    backend.exec(migration.script(branches=False, alter=False))
    return backend


def insert_rows(backend: FakeBackend, table: str, rows: list[dict[str, Any]]) -> None:
    """Put `rows` (column → value maps, as a history document keeps them) into `table`."""
    for row in rows:
        cols = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        backend.conn.execute(f"INSERT INTO {table} ({cols}) VALUES ({marks})",
                             tuple(row.values()))


def status_of(runner: Runner) -> Status:
    """The status the instance reports (through its own status route)."""
    out = Protocol(runner).handle("POST", PREFIX + "status", b"", "operator")
    return Status.from_map(cbor.loads(out.body))


def replay(fn: Workflow, doc: dict[str, Any], config: Config | None = None) -> Status:
    """Run one event of `fn` over history `doc` on a fresh runner; the status after it."""
    backend = seed(doc)
    runner = Runner(fn, config or Config(), backend)
    runner.on_alarm()
    return status_of(runner)


def load(path: str | Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(Path(path).read_text(encoding="utf-8"))
    return doc


def dump(doc: dict[str, Any], path: str | Path) -> None:
    Path(path).write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n",
                          encoding="utf-8")
