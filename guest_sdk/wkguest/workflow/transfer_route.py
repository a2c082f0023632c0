"""wk-workflow/v1's `export` and `import` routes: a live instance's whole state as one
document, and that document made an instance again, on another host or under another id
(docs/workflow-protocol.md, "Export and import"). Operators only.

`export` (`{"leave_out": [TABLE, ...]}`, optional) answers the document, read in a
read-only event:

    format         "wk-workflow-export/1"
    exported_at    the host's clock, ms
    actor          {"class", "id"}: whose it was
    alarm_at       its pending alarm (a sleep's end, a backoff, the watchdog, its
                   retention), or null
    schema         [{"type", "name", "sql"}]: each table, index and trigger of its
                   database, the runner's and its own, in the order they were made
    tables         {NAME: {"columns": [...], "rows": [[...], ...]}}: each table's rows,
                   values as the sqlite interface's packed reads give them (a blob as
                   {"b64": TEXT}), but for the tables left out
    left_out       the tables whose rows were left out (their schema is kept)

The runner's tables (storage-format.md) hold the journal, the pending events, a group's
branches, the parent and the children, the emitted stream, the attempts; the instance's
own tables are the ones its steps made. Nothing of the host's is in it (`_wk_host_*`).

`import` (`{"document": DOC}`) on an id with no instance makes one of it: each object of
its schema not there yet (the runner made its own tables when the actor was made), each
table's rows, then the alarm: its recorded time, or now if that has passed, so the
instance goes on from where it was (`"alarm": false`: none, so that nothing runs: the
compatibility report's copies, which are only replayed dry). An id that has an instance
is refused (409 `exists`), and so is a document of another format (400). Its links are
kept as they were recorded: a child still tells its parent (by class and id) when it
ends, on this host, and a parent still waits for its children's notices; a notice
nobody here takes is given up after its tries (children/notices.py).
"""

from __future__ import annotations

import base64
import json
from typing import Any

from .core.requests import BadRequest
from .core.runner import Runner
from .errors import StoreFault
from .routes import Reply, reply, status_map

FORMAT = "wk-workflow-export/1"
_SCHEMA = ("SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL"
           " AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'"
           " AND tbl_name NOT LIKE '\\_wk\\_host\\_%' ESCAPE '\\' ORDER BY rowid")
_KINDS = ("table", "index", "trigger", "view")


def export(runner: Runner, msg: dict[str, Any]) -> Reply:
    leave_out = msg.get("leave_out", [])
    if not isinstance(leave_out, list) or not all(isinstance(t, str) for t in leave_out):
        raise BadRequest(400, "bad-request", "export: 'leave_out' is a list of table names")
    db = runner.db
    if runner.store.status() is None:
        raise BadRequest(404, "unknown", "no such workflow instance (never started, or "
                         "past its retention)")
    schema = [{"type": t, "name": n, "sql": s} for t, n, s in _rows(db.query_packed(_SCHEMA))]
    unknown = sorted(set(leave_out) - {o["name"] for o in schema if o["type"] == "table"})
    if unknown:
        raise BadRequest(400, "bad-request", f"export: no table {', '.join(unknown)} to "
                         "leave out")
    tables = {}
    for o in schema:
        if o["type"] == "table" and o["name"] not in leave_out:
            packed = json.loads(db.query_packed(f"SELECT * FROM {_quoted(o['name'])}"))
            tables[o["name"]] = {"columns": packed[0], "rows": packed[1:]}
    cls, id = db.self_ref()
    return reply({"format": FORMAT, "exported_at": db.now(), "actor": {"class": cls, "id": id},
                  "alarm_at": db.alarm_get(), "schema": schema, "tables": tables,
                  "left_out": sorted(set(leave_out))})


def import_(runner: Runner, msg: dict[str, Any]) -> Reply:
    doc = msg.get("document")
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise BadRequest(400, "bad-request", f"import: 'document' is a {FORMAT} document")
    if runner.store.status() is not None:
        raise BadRequest(409, "exists", "import: this id has an instance already: import "
                         "under another id (--as), or remove this one first")
    schema, tables = doc.get("schema"), doc.get("tables")
    if not isinstance(schema, list) or not isinstance(tables, dict):
        raise BadRequest(400, "bad-request", "import: the document has no schema or tables")
    db = runner.db
    writes = _made(db, schema)
    for name, table in tables.items():
        writes += _inserts(name, table)
    try:
        db.exec_many([("BEGIN", []), *writes, ("COMMIT", [])])  # all of it, or nothing
    except StoreFault as e:
        raise BadRequest(400, "bad-request", f"import: the document does not fit: {e}") \
            from None
    runner.forget()  # the warm journal, if any, is of no instance: read it all anew
    row = runner.store.status()
    if row is None:
        raise BadRequest(400, "bad-request", "import: the document holds no instance row")
    at, now = doc.get("alarm_at"), db.now()
    if msg.get("alarm", True) is not False:
        db.alarm_set(now if not isinstance(at, int) or at < now else at)
    # Listed as it is (its state and labels, in the host's index), synced with the rows
    # before the answer says it is there.
    publish = runner.store.publish
    publish.wanted = publish.stored() or None
    publish.state(row.state, row.updated_at)
    runner.store.sync()
    return reply(status_map(runner, row))


def _made(db: Any, schema: list[Any]) -> list[tuple[str, list[Any]]]:
    """The statements that make each object of `schema` the database lacks."""
    have = {n for _t, n, _s in _rows(db.query_packed(_SCHEMA))}
    writes: list[tuple[str, list[Any]]] = []
    for o in schema:
        if not (isinstance(o, dict) and o.get("type") in _KINDS
                and isinstance(o.get("name"), str) and isinstance(o.get("sql"), str)):
            raise BadRequest(400, "bad-request", "import: each schema entry is a map of "
                             "type (table, index, trigger, view), name and sql")
        if o["name"] not in have:
            writes.append((o["sql"], []))
    return writes


def _inserts(name: str, table: Any) -> list[tuple[str, list[Any]]]:
    if not (isinstance(table, dict) and isinstance(table.get("columns"), list)
            and isinstance(table.get("rows"), list)):
        raise BadRequest(400, "bad-request", f"import: table {name!r} is not a map of "
                         "columns and rows")
    if not all(isinstance(r, list) and len(r) == len(table["columns"]) for r in table["rows"]):
        raise BadRequest(400, "bad-request", f"import: a row of table {name!r} is not a list "
                         "of one value a column")
    cols = ", ".join(_quoted(str(c)) for c in table["columns"])
    marks = ", ".join("?" for _ in table["columns"])
    sql = f"INSERT INTO {_quoted(name)} ({cols}) VALUES ({marks})"
    return [(sql, [_value(v) for v in row]) for row in table["rows"]]


def _value(v: Any) -> Any:
    if isinstance(v, dict) and isinstance(v.get("b64"), str):
        return base64.b64decode(v["b64"])
    return v


def _rows(packed: str) -> list[list[Any]]:
    rows: list[list[Any]] = json.loads(packed)[1:]
    return rows


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
