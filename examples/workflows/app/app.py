"""The app: the public face that starts orders and follows them.

Routes (under /app/{any id}):
    POST /orders/{id}            body: the order's input (JSON)   → its status
    GET  /orders/{id}                                             → its status
    POST /orders/{id}/approve    body: {"by": name}               → {"sent": "approved"}
    POST /orders/{id}/cancel                                      → its status
A status is {"state", "wake_at", "waiting_for", "output", "error", "positions"}.
Workflow errors map to statuses: unknown 404, finished 409, others 502.
"""

from __future__ import annotations

import json
from typing import Any

from wkguest import Actor, Request, Response, export
from wkguest.workflow import Client, Status, WorkflowError

orders = Client("orders")  # at module level: see wkguest.workflow.client
_STATUS = {"unknown": 404, "finished": 409}


def as_json(s: Status) -> dict[str, Any]:
    return {"state": s.state, "wake_at": s.wake_at, "waiting_for": list(s.waiting_for),
            "output": s.output, "error": s.error, "positions": s.positions}


class App(Actor):
    def handle(self, req: Request) -> Response:
        parts = req.path.strip("/").split("/")
        if len(parts) < 2 or parts[0] != "orders":
            return Response.json({"error": f"no route {req.path}"}, status=404)
        order_id, action = parts[1], "/".join(parts[2:])
        try:
            return self.route(req, order_id, action)
        except WorkflowError as e:
            return Response.json({"error": str(e), "kind": e.kind},
                                 status=_STATUS.get(e.kind, 502))

    def route(self, req: Request, order_id: str, action: str) -> Response:
        if action == "" and req.method == "POST":
            return Response.json(as_json(orders.start(order_id, json.loads(req.body or b"{}"))))
        if action == "" and req.method == "GET":
            return Response.json(as_json(orders.status(order_id)))
        if action == "approve" and req.method == "POST":
            orders.send_event(order_id, "approved", json.loads(req.body or b"{}"))
            return Response.json({"sent": "approved"})
        if action == "cancel" and req.method == "POST":
            return Response.json(as_json(orders.cancel(order_id)))
        return Response.json({"error": f"no route {req.method} {req.path}"}, status=404)


Handler = export(App)
