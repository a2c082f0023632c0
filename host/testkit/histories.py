"""Golden histories: an instance's recorded journal kept as a file, and the check that
the current code still replays it (versioning tests).

`record_history(wf, path)` writes the instance's tables as a `wk-workflow-history/1`
document (the format of wkguest.workflow.testing.history, the runner's own golden files,
with the actor's class and id beside, which the replay gives the code again), read
through the protocol's test route, so on CPython and in the sandbox alike.
`check_history(app, path)` seeds a fresh instance of the app's workflow with it (or with
a live instance's export, `wkhost workflow export`'s document), on plain CPython, and
replays it dry with the app's current code (the route's `replay`: nothing new runs).
It raises HistoryMismatch (an AssertionError) when the code reorders or renames a
recorded position, takes a `patched` branch the history does not hold, ends before the
recorded positions, goes on past the end of a finished run, or returns another result
than the recorded one; the message names the position and both calls, as the runner's
own error does.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wkguest.workflow import cbor
from wkguest.workflow.core.migration import script
from wkguest.workflow.core.values import decode
from wkguest.workflow.status import PREFIX
from wkguest.workflow.testing.history import FORMAT, LEFT_OUT, TABLES

from .local import Local
from .workflows import WorkflowInstance

ENDED = ("completed", "failed", "cancelled", "terminated")
EXPORT_FORMAT = "wk-workflow-export/1"  # `wkhost workflow export`'s (transfer_route.py)


class HistoryMismatch(AssertionError):
    """The current code does not replay a recorded history (see the module's doc)."""


@dataclass(frozen=True)
class Replayed:
    """How the current code replayed a history: whether its function ended over the
    journal, the position it got to, and what it returned."""

    ended: bool
    position: int
    output: Any


def history_of(wf: WorkflowInstance, note: str = "") -> dict[str, Any]:
    """Instance `wf`'s tables as a history document."""
    doc: dict[str, Any] = {"format": FORMAT, "now": wf.kit.now(), "note": note,
                           "actor": {"class": wf.cls, "id": wf.id}}
    for key, (table, order) in TABLES.items():
        columns, rows = wf.table(f"SELECT * FROM {table} ORDER BY {order}")
        doc[key] = [{c: v for c, v in zip(columns, row, strict=True) if c not in LEFT_OUT}
                    for row in rows]
    doc["instance"] = doc["instance"][0] if doc["instance"] else None
    return doc


def record_history(wf: WorkflowInstance, path: str | Path, note: str = "") -> dict[str, Any]:
    """Write `wf`'s history to `path` (JSON); the document."""
    doc = history_of(wf, note)
    Path(path).write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n",
                          encoding="utf-8")
    return doc


def check_history(app: str | Path, history: str | Path | dict[str, Any]) -> Replayed:
    """Replay `history` (a path or a document) with the app's current code. Raises
    HistoryMismatch, naming the history and what differs; ValueError for a document
    that is not a history."""
    where = str(history) if not isinstance(history, dict) else "the history"
    doc = history if isinstance(history, dict) else \
        json.loads(Path(history).read_text(encoding="utf-8"))
    if doc.get("format") == EXPORT_FORMAT:
        doc = from_export(doc)
    if doc.get("format") != FORMAT or not doc.get("instance"):
        raise ValueError(f"{where} is not a {FORMAT} document of a started instance")
    # The recorded actor's class and id: what the code may read (lifecycle.self_ref).
    actor = doc.get("actor") or {"class": "golden", "id": "golden"}
    cls, id = str(actor["class"]), str(actor["id"])
    with tempfile.TemporaryDirectory(prefix="wk-history-") as tmp:
        local = Local(Path(tmp) / "actors", doc["now"])
        try:
            local.serve(cls, app)
            local.seed(cls, id, [(TABLES[k][0], rows) for k, rows in (
                ("instance", [doc["instance"]]), ("steps", doc["steps"]),
                ("events", doc["events"]))], script(branches=False, alter=False))
            r = local.request(cls, id, "POST", PREFIX + "test", cbor.dumps({"replay": True}))
        finally:
            local.close()
    answer = cbor.loads(r.body)
    if r.status != 200:
        raise HistoryMismatch(f"{where}: the replay was refused ({r.status}): {answer}")
    return _verdict(where, doc, answer)


def from_export(doc: dict[str, Any]) -> dict[str, Any]:
    """A `wkhost workflow export` document (a live instance's whole state) as a history:
    its instance, journal and events."""
    def rows(table: str) -> list[dict[str, Any]]:
        t = doc["tables"].get(table) or {"columns": [], "rows": []}
        return [{c: v for c, v in zip(t["columns"], r, strict=True) if c not in LEFT_OUT}
                for r in t["rows"]]

    instance = rows(TABLES["instance"][0])
    return {"format": FORMAT, "now": doc["exported_at"], "note": "exported",
            "actor": doc["actor"], "instance": instance[0] if instance else None,
            "steps": rows(TABLES["steps"][0]), "events": rows(TABLES["events"][0])}


def _verdict(where: str, doc: dict[str, Any], answer: dict[str, Any]) -> Replayed:
    if answer["error"] is not None:
        raise HistoryMismatch(f"{where}: {answer['error']}")
    inst, recorded = doc["instance"], len(doc["steps"])
    got = Replayed(answer["ended"], answer["position"], answer["output"])
    if got.ended and got.position < recorded:
        raise HistoryMismatch(f"{where}: this code ends at position {got.position}, before "
                              f"the {recorded} recorded positions")
    if inst["state"] in ENDED and not got.ended:
        raise HistoryMismatch(f"{where}: the recorded run ended ({inst['state']}) after "
                              f"{recorded} positions, but this code goes on to new work at "
                              f"position {got.position}")
    if inst["state"] == "completed" and inst.get("output") is not None:
        output = cbor.loads(cbor.dumps(decode(inst["output"], bool(inst["output_tagged"]))))
        if output != got.output:
            raise HistoryMismatch(f"{where}: a different result: recorded {output!r}, "
                                  f"this code returns {got.output!r}")
    return got
