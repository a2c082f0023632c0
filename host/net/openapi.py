"""`GET /_wk/openapi.json`: the OpenAPI 3.1 document of wk-workflow/v1's JSON face, so a
web app or a client generator in any language starts from it.

Every route is `POST /{class}/{id}/wk-workflow/v1/{route}` (and GET for the reads),
with the operator's token (`Authorization: Bearer ...`). The document describes the JSON
face (json_face.py); the same maps travel as CBOR. docs/workflow-protocol.md is the
prose, and tests/unit/test_openapi.py checks that the document's routes and methods are
the runner's (wkguest.workflow.protocol's). Served without a token: it says nothing of
this server but its protocol.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

_VALUE = {"description": "a value of the JSON subset: JSON, with the tags of "
          "docs/workflow-protocol.md#json for bytes, integers past 2^53, NaN and "
          "infinities, and texts that start with U+0000"}
_NAME = {"type": "string", "minLength": 1, "maxLength": 256}
_MS = {"type": "integer", "minimum": 0}
_MAP = {"type": "object"}

# route -> (methods, summary, request properties, the answer's schema)
ROUTES: dict[str, tuple[tuple[str, ...], str, dict[str, Any], dict[str, Any]]] = {
    "start": (("post",), "Create the instance (idempotent), or answer for the one there",
              {"input": _VALUE, "wait_ms": _MS, "labels": _MAP,
               "event": {"type": "object", "properties": {"name": _NAME, "payload": _VALUE}},
               "update": {"type": "object", "properties": {"name": _NAME, "arg": _VALUE,
                                                           "id": {"type": "string"}}},
               "idempotency_key": {"type": "string"}, "parent": _MAP,
               "detached": {"type": "boolean"}}, {"$ref": "#/components/schemas/Status"}),
    "status": (("get", "post"), "The status map, held until the instance rests with wait_ms",
               {"wait_ms": _MS, "held_by": {"type": "boolean"}, "input": {"type": "boolean"}},
               {"$ref": "#/components/schemas/Status"}),
    "summary": (("get", "post"), "The status map without the output", {},
                {"$ref": "#/components/schemas/Status"}),
    "event": (("post",), "Deliver an event", {"name": _NAME, "payload": _VALUE},
              {"type": "object", "properties": {"events_pending": {"type": "integer"}}}),
    "update": (("post",), "Send an update, or ask how one stands",
               {"name": _NAME, "arg": _VALUE, "id": {"type": "string"}, "wait_ms": _MS},
               {"type": "object", "properties": {
                   "update": {"$ref": "#/components/schemas/Update"}}}),
    "query": (("get", "post"), "A query handler's answer over a dry replay",
              {"name": _NAME, "arg": _VALUE},
              {"type": "object", "properties": {"result": _VALUE,
                                                "position": {"type": "integer"}}}),
    "cancel": (("post",), "Cancel it (with compensation, if asked)",
               {"compensate": {"type": "boolean"}}, {"$ref": "#/components/schemas/Status"}),
    "steps": (("get", "post"), "The recorded positions, a page at a time",
              {"from": _MS, "limit": _MS, "attempts": {"type": "boolean"},
               "values": {"type": "boolean"}, "value_bytes": _MS}, _MAP),
    "events": (("get", "post"), "The emitted-event stream from an offset",
               {"after": _MS, "limit": _MS}, _MAP),
    "child-done": (("post",), "A child's notice that it finished (actors only)", {}, _MAP),
    "watch": (("post",), "A workflow waits for this one to finish (actors only)",
              {"cls": _NAME, "id": _NAME}, _MAP),
    "terminate": (("post",), "Stop it at once, running no compensation",
                  {"reason": {"type": "string"}}, {"$ref": "#/components/schemas/Status"}),
    "pause": (("post",), "Pause it", {}, {"$ref": "#/components/schemas/Status"}),
    "resume": (("post",), "Resume a paused instance", {},
               {"$ref": "#/components/schemas/Status"}),
    "rescue": (("post",), "Run a parked or failed instance again", {},
               {"$ref": "#/components/schemas/Status"}),
    "restart": (("post",), "Run it again from the start or from a position",
                {"input": _VALUE, "from": _MS, "step": _NAME, "occurrence": _MS},
                {"$ref": "#/components/schemas/Status"}),
    "test": (("post",), "A test's mocks, reads and dry replay (--fake-clock hosts only)",
             {}, _MAP),
    "export": (("post",), "The instance's whole state as a document",
               {"leave_out": {"type": "array", "items": {"type": "string"}}}, _MAP),
    "import": (("post",), "Make an instance of an exported document",
               {"document": _MAP}, {"$ref": "#/components/schemas/Status"}),
}

_STATUS = {"type": "object", "required": ["state", "run_id"], "properties": {
    "state": {"enum": ["running", "waiting", "compensating", "paused", "completed", "failed",
                       "cancelled", "terminated", "parked"]},
    "run_id": {"type": "string"}, "runs": {"type": "integer"},
    "wake_at": {"type": ["integer", "null"]},
    "waiting_for": {"type": "array", "items": {"type": "string"}},
    "output": _VALUE, "error": {"type": ["string", "null"]},
    "positions": {"type": "integer"}, "created_at": {"type": "integer"},
    "updated_at": {"type": "integer"}, "finished_at": {"type": ["integer", "null"]},
    "events_pending": {"type": "integer"}, "updates_pending": {"type": "integer"},
    "created": {"type": "boolean"}, "update": {"$ref": "#/components/schemas/Update"}}}
_UPDATE = {"type": "object", "required": ["id", "name", "state"], "properties": {
    "id": {"type": "string"}, "name": {"type": "string"},
    "state": {"enum": ["accepted", "taken", "completed", "failed"]}, "result": _VALUE,
    "error": {"type": ["string", "null"]}, "position": {"type": ["integer", "null"]},
    "run_id": {"type": ["string", "null"]}, "accepted_at": {"type": "integer"},
    "done_at": {"type": ["integer", "null"]}}}
_REFUSAL = {"type": "object", "required": ["error", "message"], "properties": {
    "error": {"type": "string"}, "message": {"type": "string"}}}


def document() -> dict[str, Any]:
    """The whole document."""
    params = [{"name": n, "in": "path", "required": True, "schema": {"type": "string"},
               "description": d} for n, d in (
        ("class", "the workflow class"), ("id", "the instance id, percent-encoded"))]
    paths: dict[str, Any] = {}
    for route, (methods, summary, props, answer) in ROUTES.items():
        ops: dict[str, Any] = {"parameters": params}
        for m in methods:
            op: dict[str, Any] = {
                "operationId": f"{m}_{route.replace('-', '_')}", "summary": summary,
                "responses": {
                    "200": {"description": "the runner's answer", "content": {
                        "application/json": {"schema": answer}}},
                    "default": {"description": "a refusal (docs/workflow-protocol.md)",
                                "content": {"application/json": {
                                    "schema": {"$ref": "#/components/schemas/Refusal"}}}}}}
            if m == "post":
                op["requestBody"] = {"required": False, "content": {"application/json": {
                    "schema": {"type": "object", "properties": props}}}}
                op["parameters"] = [{"name": "Idempotency-Key", "in": "header",
                                     "schema": {"type": "string"}}] if route == "start" else []
            ops[m] = op
        paths[f"/{{class}}/{{id}}/wk-workflow/v1/{route}"] = ops
    return {"openapi": "3.1.0",
            "info": {"title": "wk-workflow/v1", "version": "1",
                     "description": "The protocol between workflow clients and the runner "
                                    "(docs/workflow-protocol.md), in its JSON face."},
            "security": [{"bearer": []}],
            "components": {"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
                           "schemas": {"Status": _STATUS, "Update": _UPDATE,
                                       "Refusal": _REFUSAL}},
            "paths": paths}


def add_routes(app: web.Application) -> None:
    doc = document()

    async def answer(_request: web.Request) -> web.Response:
        return web.json_response(doc)

    app.router.add_get("/_wk/openapi.json", answer)
