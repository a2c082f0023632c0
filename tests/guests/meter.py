"""A guest that reads what `lifecycle` tells of its own call: the fuel burnt, who runs it.

    GET /meter?n=N   {"before": fuel used on entry, "after": fuel used after N loop
                      rounds, "holder": lifecycle.holder()}
"""

from __future__ import annotations

from wkguest import Actor, Request, Response, export, lifecycle


def _meter(req: Request) -> Response:
    before = lifecycle.fuel_used()
    total = 0
    for i in range(int(req.arg("n") or 0)):
        total += i
    after = lifecycle.fuel_used()
    return Response.json({"before": before, "after": after, "holder": lifecycle.holder(),
                          "total": total})


class Meter(Actor):
    def handle(self, req: Request) -> Response:
        if req.path == "/meter":
            return _meter(req)
        return Response.json({"error": f"no route {req.path}"}, status=404)


Handler = export(Meter)
