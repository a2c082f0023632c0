"""The `pages` actor: what the ingest and publish workflows' steps call, standing in for
a converter and a search index. Every call is counted in `calls`, so a test can tell a
step (or a rollback) that ran again from one that did not, and every effect is
idempotent by its key, as Cloudflare's rule for steps asks (a step may run again).

Routes (POST, JSON in and out, under /pages/{id}):
    /count    {material}               {"pages": the number after the id's last "-", or 25}
    /convert  {material, first, last}  {"converted": [first, last], "attempt": n} | 503
              busy (503) the first time it sees a material's batch from page 11; for a
              material whose id contains "stuck", every time
    /index    {key}                    {"indexed": key}       (tagged app:effect)
    /unindex  {key, why}               {"unindexed": key}     (tagged app:undo)
    /announce {material, fail}         {"announced": material} | 409 when asked to fail
    GET /calls                         {"calls": [[op, key, n], ...]}
    GET /index                         {"indexed": [...], "unindexed": [[key, why], ...]}
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from wkguest import Actor, Request, Response, export, sqlite

BUSY_BATCH = 11  # the first page of the batch the converter is busy for
DEFAULT_PAGES = 25


def _count(op: str, key: str) -> int:
    rows = sqlite.exec(
        "INSERT INTO calls (op, key, n) VALUES (?, ?, 1) "
        "ON CONFLICT (op, key) DO UPDATE SET n = n + 1 RETURNING n", (op, key))
    return int(rows.scalar() or 0)


def count(body: dict[str, Any]) -> Response:
    material = str(body["material"])
    _count("count", material)
    tail = material.rsplit("-", 1)[-1]
    return Response.json({"pages": int(tail) if tail.isdigit() else DEFAULT_PAGES})


def convert(body: dict[str, Any]) -> Response:
    material, first = str(body["material"]), int(body["first"])
    n = _count("convert", f"{material}:{first}")
    if first == BUSY_BATCH and (n == 1 or "stuck" in material):
        return Response.json({"error": f"the converter is busy (attempt {n})"}, status=503)
    return Response.json({"converted": [first, int(body["last"])], "attempt": n})


def index(body: dict[str, Any]) -> Response:
    key = str(body["key"])
    _count("index", key)
    sqlite.exec_durable("/*app:effect*/ INSERT OR IGNORE INTO indexed (key) VALUES (?)",
                        (key,))
    return Response.json({"indexed": key})


def unindex(body: dict[str, Any]) -> Response:
    key = str(body["key"])
    _count("unindex", key)
    sqlite.exec_durable("/*app:undo*/ INSERT OR IGNORE INTO unindexed (key, why) "
                        "VALUES (?, ?)", (key, body.get("why")))
    return Response.json({"unindexed": key})


def announce(body: dict[str, Any]) -> Response:
    material = str(body["material"])
    _count("announce", material)
    if body.get("fail"):
        return Response.json({"error": f"the catalogue refused {material}"}, status=409)
    return Response.json({"announced": material})


ROUTES: dict[str, Callable[[dict[str, Any]], Response]] = {
    "/count": count, "/convert": convert, "/index": index, "/unindex": unindex,
    "/announce": announce,
}


class Pages(Actor):
    def on_init(self) -> None:
        sqlite.exec(
            "CREATE TABLE calls (op TEXT, key TEXT, n INTEGER, PRIMARY KEY (op, key));"
            "CREATE TABLE indexed (key TEXT PRIMARY KEY);"
            "CREATE TABLE unindexed (key TEXT PRIMARY KEY, why TEXT)")

    def handle(self, req: Request) -> Response:
        if req.method == "GET" and req.path == "/calls":
            rows = sqlite.exec("SELECT op, key, n FROM calls ORDER BY op, key").rows
            return Response.json({"calls": [list(r) for r in rows]})
        if req.method == "GET" and req.path == "/index":
            done = sqlite.exec("SELECT key FROM indexed ORDER BY key").rows
            undone = sqlite.exec("SELECT key, why FROM unindexed ORDER BY key").rows
            return Response.json({"indexed": [r[0] for r in done],
                                  "unindexed": [list(r) for r in undone]})
        route = ROUTES.get(req.path)
        if route is None or req.method != "POST":
            return Response.json({"error": f"no route {req.method} {req.path}"}, status=404)
        try:
            body = json.loads(req.body or b"{}")
        except ValueError:
            return Response.json({"error": "the body is not JSON"}, status=400)
        return route(body)


Handler = export(Pages)
