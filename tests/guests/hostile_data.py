"""A guest whose data makes the host work (issue 36, "Host work over guest data" and
"Host code that reads guest-writable data"): each route runs one pattern whose host-side
cost or content the guest chooses, and answers a small summary, never the data itself.
Used by bench/bench_hostile.py and tests/host/test_guest_data_bounds.py.

    GET  /now                  {"now"}
    POST /sql   body {"sql", "params"}  sqlite.exec        {"rows"} | {"error"}
    POST /trim?n=N&repeat=R    one statement: R trims (each side) of N distinct characters
                               above U+FFFF by the same N       {"length"} | {"error"}
    POST /rows?n=N&kb=K&mode=exec|write|packed   one statement of N rows of a K KiB blob
                               each, through sqlite.exec, sqlite.write or query-packed
                                                                {"rows", "bytes"} | {"error"}
    POST /wf-bad               a `_wk_wf` row (the SDK's table, which the host reads for
                               traces) whose run_id is not UTF-8  {"ok": true} | {"error"}

On-init: an actor whose id is "tables-N" or starts "tables-N-" makes N tables in one
schema-only script (what a class's schema image is learnt from); the others run no SQL.
"""

from __future__ import annotations

from wkguest import Actor, Request, Response, export, lifecycle, sqlite
from wkguest.errors import SqliteError

ROWS = ("WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < ?1) "
        "SELECT zeroblob(?2) FROM c")
TRIM = ("WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < ?2) "
        "SELECT sum(length(trim(?1 || i || ?1, ?1))) FROM c")


def _arg(req: Request, name: str, default: int) -> int:
    return int(req.arg(name) or default)


def _error(e: Exception) -> Response:
    return Response.json({"error": str(e)})


def now(req: Request) -> Response:
    return Response.json({"now": lifecycle.now()})


def sql(req: Request) -> Response:
    doc = req.json()
    try:
        rows = sqlite.exec(doc["sql"], doc.get("params", [])).rows
    except SqliteError as e:
        return _error(e)
    return Response.json({"rows": [list(r) for r in rows]})


def trim(req: Request) -> Response:
    chars = "".join(chr(0x10000 + i) for i in range(_arg(req, "n", 80_000)))
    try:
        length = sqlite.exec(TRIM, (chars, _arg(req, "repeat", 10))).scalar()
    except SqliteError as e:
        return _error(e)
    return Response.json({"length": length})


def rows(req: Request) -> Response:
    params = (_arg(req, "n", 32), _arg(req, "kb", 1024) * 1024)
    mode = req.arg("mode") or "exec"
    try:
        if mode == "write":
            return Response.json({"rows": sqlite.write(ROWS, params), "bytes": 0})
        if mode == "packed":
            packed = sqlite.query_packed(ROWS, params)
            return Response.json({"rows": packed.count("b64"), "bytes": len(packed)})
        got = sqlite.exec(ROWS, params).rows
    except SqliteError as e:
        return _error(e)
    return Response.json({"rows": len(got), "bytes": sum(len(r[0] or b"") for r in got)})


def wf_bad(req: Request) -> Response:
    try:
        sqlite.exec(
            "CREATE TABLE IF NOT EXISTS _wk_wf (id INTEGER PRIMARY KEY, run_id, state); "
            "CREATE TABLE IF NOT EXISTS _wk_wf_step (pos INTEGER); "
            "INSERT OR REPLACE INTO _wk_wf VALUES (1, CAST(x'ff' AS TEXT), 'running')")
    except SqliteError as e:
        return _error(e)
    return Response.json({"ok": True})


ROUTES = {"/now": now, "/sql": sql, "/trim": trim, "/rows": rows, "/wf-bad": wf_bad}


def tables_script(actor_id: str) -> str | None:
    """The on-init's one script for an actor "tables-N[-...]", else None."""
    if not actor_id.startswith("tables-"):
        return None
    n = int(actor_id.split("-")[1])
    return " ".join(f"CREATE TABLE t{i} (a);" for i in range(n))


class HostileData(Actor):
    def on_init(self) -> None:
        script = tables_script(lifecycle.self_ref().id)
        if script is not None:
            sqlite.exec(script)

    def handle(self, req: Request) -> Response:
        route = ROUTES.get(req.path)
        if route is None:
            return Response.json({"error": f"no route {req.path}"}, status=404)
        return route(req)


Handler = export(HostileData)
