"""A guest that reads what `lifecycle` tells of its own call (the fuel burnt, who runs
it), and publishes attributes (WIT `attributes`).

    GET  /meter?n=N   {"before": fuel used on entry, "after": fuel used after N loop
                       rounds, "holder": lifecycle.holder(), "now_and_fuel": then
                       lifecycle.now_and_fuel(), "now": lifecycle.now() after it}
    POST /publish     body {"status", "at", "labels"?: {k: v} | null, "write"?: bool,
                       "trap"?: bool}: publishes, then (with "write") inserts a row,
                       then (with "trap") traps; {"ok": true} | {"error": reason}
"""

from __future__ import annotations

import json

from wkguest import Actor, Request, Response, attributes, export, lifecycle, sqlite


def _meter(req: Request) -> Response:
    before = lifecycle.fuel_used()
    total = 0
    for i in range(int(req.arg("n") or 0)):
        total += i
    after = lifecycle.fuel_used()
    both = lifecycle.now_and_fuel()
    return Response.json({"before": before, "after": after, "holder": lifecycle.holder(),
                          "total": total, "now_and_fuel": list(both), "now": lifecycle.now()})


class Trap(BaseException):
    """Escapes every SDK hook: the export traps."""


def _publish(req: Request) -> Response:
    m = json.loads(req.body)
    try:
        attributes.publish(m["status"], m["at"], m.get("labels"))
    except attributes.PublishError as e:
        return Response.json({"error": str(e)})
    if m.get("write"):
        sqlite.exec("INSERT INTO t VALUES (?)", (m["at"],))
    if m.get("trap"):
        raise Trap("meter: trap after publishing")
    return Response.json({"ok": True})


class Meter(Actor):
    def on_init(self) -> None:
        sqlite.exec("CREATE TABLE t (at INTEGER)")

    def handle(self, req: Request) -> Response:
        if req.path == "/meter":
            return _meter(req)
        if req.path == "/publish":
            return _publish(req)
        return Response.json({"error": f"no route {req.path}"}, status=404)


Handler = export(Meter)
