"""The `api` actor: seed 003's Hono app, as a plain actor, and a route for each call of
the workflow binding, so that a test (or curl) drives every one of them from an actor.

`INGEST = Workflow("ingest")` is seed 003's `env.INGEST`: bindings are made at module
level (a module first imported inside an event is not found in a component).

Routes (under /api/{any id}; JSON in and out):
    POST /materials/index             {materialId}        → {"id": the new instance's id}
    POST /materials/{id}/review       {ok}                → {"sent": "reviewed"}
    GET  /materials/{id}                                  → its status (below)
  and, for BINDING "ingest" or "publish":
    POST /workflows/BINDING           {id?, params?}      → {"id"}            (create)
    POST /workflows/BINDING/batch     [{id?, params?}...] → {"ids": [...]}    (create_batch)
    GET  /workflows/BINDING/{id}                          → its status        (get, status)
    POST /workflows/BINDING/{id}/event {type, payload}    → {"sent": type}    (send_event)
    POST /workflows/BINDING/{id}/pause | /resume          → its status
    POST /workflows/BINDING/{id}/terminate {rollback?}    → its status
    POST /workflows/BINDING/{id}/restart {from?}          → its status
A status is {"id", "status" (Cloudflare's name), "state" (the runner's), "output",
"error"}. A WorkflowError answers {"error", "kind"}: unknown 404, exists and finished
409, refused with the instance's own status, any other 502.
"""

from __future__ import annotations

import json
from typing import Any

from wkguest import Actor, Request, Response, export
from wkguest.cloudflare import Workflow, WorkflowInstance
from wkguest.workflow import WorkflowError

INGEST = Workflow("ingest")
BINDINGS = {"ingest": INGEST, "publish": Workflow("publish")}
_STATUS = {"unknown": 404, "exists": 409, "finished": 409}


def status_json(inst: WorkflowInstance) -> dict[str, Any]:
    s = inst.status()
    return {"id": inst.id, "status": s.status, "state": s.state, "output": s.output,
            "error": s.error}


def body_of(req: Request) -> Any:
    return json.loads(req.body or b"{}")


class Api(Actor):
    def handle(self, req: Request) -> Response:
        parts = req.path.strip("/").split("/")
        try:
            if parts[0] == "materials":
                return self.materials(req, parts[1:])
            if parts[0] == "workflows" and len(parts) > 1 and parts[1] in BINDINGS:
                return self.binding(req, BINDINGS[parts[1]], parts[2:])
        except WorkflowError as e:
            code = e.status if e.kind == "refused" and e.status else _STATUS.get(e.kind, 502)
            return Response.json({"error": str(e), "kind": e.kind}, status=code)
        return Response.json({"error": f"no route {req.method} {req.path}"}, status=404)

    def materials(self, req: Request, rest: list[str]) -> Response:
        """Seed 003's route, and the two a reviewer's page would call."""
        if rest == ["index"] and req.method == "POST":
            material_id = body_of(req)["materialId"]
            instance = INGEST.create(params={"materialId": material_id})
            return Response.json({"id": instance.id})
        if len(rest) == 2 and rest[1] == "review" and req.method == "POST":
            INGEST.get(rest[0]).send_event(type="reviewed",
                                           payload={"ok": bool(body_of(req)["ok"])})
            return Response.json({"sent": "reviewed"})
        if len(rest) == 1 and req.method == "GET":
            return Response.json(status_json(INGEST.get(rest[0])))
        return Response.json({"error": f"no route {req.method} {req.path}"}, status=404)

    def binding(self, req: Request, wf: Workflow, rest: list[str]) -> Response:
        if not rest and req.method == "POST":
            b = body_of(req)
            return Response.json({"id": wf.create(id=b.get("id"), params=b.get("params")).id})
        if rest == ["batch"] and req.method == "POST":
            return Response.json({"ids": [i.id for i in wf.create_batch(body_of(req))]})
        if len(rest) == 1 and req.method == "GET":
            return Response.json(status_json(wf.get(rest[0])))
        if len(rest) == 2 and req.method == "POST":
            return self.move(wf.get(rest[0]), rest[1], body_of(req))
        return Response.json({"error": f"no route {req.method} {req.path}"}, status=404)

    def move(self, inst: WorkflowInstance, what: str, b: dict[str, Any]) -> Response:
        if what == "event":
            inst.send_event(type=b["type"], payload=b.get("payload"))
            return Response.json({"sent": b["type"]})
        if what == "pause":
            inst.pause()
        elif what == "resume":
            inst.resume()
        elif what == "terminate":
            inst.terminate(rollback=bool(b.get("rollback")))
        elif what == "restart":
            inst.restart(from_step=b.get("from"))
        else:
            return Response.json({"error": f"no move {what!r}"}, status=404)
        return Response.json(status_json(inst))


Handler = export(Api)
