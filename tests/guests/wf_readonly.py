"""A workflow class whose query handlers try every change a query may not make, for
tests/e2e/test_query_read_only.py.

A step makes a table `notes` and writes "from-run" into it; the workflow then waits for
the event "next", after which a second step writes "after-query" and the workflow returns
the notes. The query "read" answers the notes and the alarm (reads, which must still
work); each other query tries one change, named by the query, and raises what it met:
"exec", "exec-durable", "write", "cte" (an INSERT behind a WITH, through `query`),
"fetch", "call", "alarm-set", "alarm-clear", "delete-self", "publish" (answering None
if it was made). The query "raw" writes through the bindings themselves, past the SDK's
modules, and answers the host's error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from wkguest import _bindings as _b
from wkguest import actors, alarm, attributes, http, lifecycle, sqlite, workflow

INSERT = "INSERT INTO notes (v) VALUES (?)"


def _notes() -> list[str]:
    return [str(r[0]) for r in sqlite.query("SELECT v FROM notes ORDER BY rowid")]


def _raw(_arg: Any) -> str:
    try:
        _b.sqlite.exec_write(INSERT, [_b.sqlite.Value_Text("from-raw")], False)
    except _b.Err as e:
        return str(e.value)
    return "written"


CHANGES: dict[str, Callable[[], Any]] = {
    "exec": lambda: sqlite.exec(INSERT, ("from-exec",)),
    "exec-durable": lambda: sqlite.exec_durable(INSERT, ("from-exec-durable",)),
    "write": lambda: sqlite.write(INSERT, ("from-write",)),
    "cte": lambda: sqlite.query(
        "WITH x(v) AS (SELECT 'from-cte') INSERT INTO notes (v) SELECT v FROM x RETURNING v"),
    "fetch": lambda: http.fetch("http://127.0.0.1:9/"),
    "call": lambda: actors.call("wf_readonly", "another", "GET", "/"),
    "alarm-set": lambda: alarm.set(lifecycle.now() + 60_000),
    "alarm-clear": lambda: alarm.clear(),
    "delete-self": lambda: lifecycle.delete_self(),
    "publish": lambda: attributes.publish("queried", lifecycle.now()),
}


def _trying(change: Callable[[], Any]) -> Callable[[Any], None]:
    """A handler that makes `change`, and answers None if nothing stopped it."""
    def handler(_arg: Any) -> None:
        change()
    return handler


def _create() -> str:
    sqlite.exec("CREATE TABLE IF NOT EXISTS notes (v TEXT NOT NULL)")
    sqlite.write(INSERT, ("from-run",))
    return "created"


def _after() -> str:
    sqlite.write(INSERT, ("after-query",))
    return "written"


def ledger(wf: workflow.Run, _inp: Any) -> Any:
    wf.query("read", lambda _: {"notes": _notes(), "alarm": alarm.get() is not None})
    for name, change in CHANGES.items():
        wf.query(name, _trying(change))
    wf.query("raw", _raw)
    wf.step("create", _create)
    wf.wait_for_event("next", 86_400_000)
    wf.step("after", _after)
    return _notes()


Handler = workflow.serve(ledger, workflow.Config(retention_ms=3_600_000))
