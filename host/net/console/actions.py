"""The console's actions: `POST /_wk/console/api/action`, an operator's move on an instance.

    {"cls": C, "id": I, "action": A, "args": {...}, "note": TEXT?}

A is one of the wk-workflow/v1 routes an operator moves an instance with, and args what
that route takes (docs/workflow-protocol.md): event {name, payload}, update {name, arg,
id}, cancel {compensate},
terminate {reason}, pause, resume, rescue, restart {input | from | step, occurrence}.
The answer is {"status": HTTP status, "answer": the instance's answer, "error": its
refusal or null}.

Refused before anything runs: no session (401), another origin or no CSRF token (403,
session.py), a malformed request (400). Every action that reaches the instance is
written to the audit log as the operator's, as the front door's middleware writes a
request with the admin token (host/net/audit.py): the same row, with the note
"console" (and the operator's own note after it), so `wkhost audit` shows both alike.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import cbor2
from aiohttp import web

from ...errors import BadRequest
from .. import audit
from ..audit_entry import DESCRIBED_BYTES, Answered, describe
from .api import json_answer, refused
from .calls import CBOR, Answer, call, error_of, target
from .session import caller_of_session

NOTE = "console"
_NOTE_CHARS = 400
_ARGS: dict[str, dict[str, type | tuple[type, ...]]] = {
    "event": {"name": str, "payload": object},
    "update": {"name": str, "arg": object, "id": str},
    "cancel": {"compensate": bool},
    "terminate": {"reason": str},
    "pause": {}, "resume": {}, "rescue": {},
    "restart": {"input": object, "from": int, "step": str, "occurrence": int},
}


def add_routes(app: web.Application, prefix: str) -> None:
    app.router.add_post(f"{prefix}/api/action", _action)


async def _action(request: web.Request) -> web.Response:
    no = refused(request)
    if no is not None:
        return no
    try:
        cls, actor_id, route, msg, note = parsed(await request.read())
    except BadRequest as e:
        return json_answer({"error": str(e)}, 400)
    loop = asyncio.get_running_loop()
    started, at = loop.time(), request.app["host"].clock.now_ms()
    a = await call(request.app, cls, actor_id, route, msg)
    took = round((loop.time() - started) * 1000)
    who = caller_of_session(request)
    _record(request.app, at, took, target(cls, actor_id, route), msg, a, note,
            who.name if who is not None else "")
    return json_answer({"status": a.status, "answer": a.doc, "error": error_of(a)})


def parsed(body: bytes) -> tuple[str, str, str, dict[str, Any], str]:
    """(class, id, route, the route's message, the audit note) of an action's request."""
    try:
        doc = json.loads(body)
    except ValueError:
        raise BadRequest("an action is a JSON map: {cls, id, action, args}") from None
    if not isinstance(doc, dict):
        raise BadRequest("an action is a JSON map: {cls, id, action, args}")
    for key in ("cls", "id", "action"):
        if not isinstance(doc.get(key), str) or not doc[key]:
            raise BadRequest(f"{key}: give a non-empty text")
    route = doc["action"]
    if route not in _ARGS:
        raise BadRequest(f"action: one of {', '.join(_ARGS)}, not {route!r}")
    args = doc.get("args") or {}
    if not isinstance(args, dict):
        raise BadRequest("args: give a map")
    msg = {}
    for key, value in args.items():
        kind = _ARGS[route].get(key)
        if kind is None:
            raise BadRequest(f"{route} takes no {key!r}")
        if kind is not object and (not isinstance(value, kind) or
                                   (kind is int and isinstance(value, bool))):
            raise BadRequest(f"{route}: {key} must be {getattr(kind, '__name__', kind)}")
        msg[key] = value
    note = doc.get("note")
    text = f"{NOTE}: {note}" if isinstance(note, str) and note.strip() else NOTE
    return doc["cls"], doc["id"], route, msg, text[:_NOTE_CHARS]


def _record(app: web.Application, at: int, took_ms: int, raw_path: str,
            msg: dict[str, Any], a: Answer, note: str, who: str) -> None:
    log = audit.log_of(app)  # the front door's own log: one per process
    if log is None:  # the app was not started (never so in `wkhost serve`)
        return
    request_body = cbor2.dumps(msg)
    entry = Answered(
        at=at, took_ms=took_ms, process=app["host"].config.partition.me, method="POST",
        raw_path=raw_path, status=a.status, content_type=a.content_type or CBOR,
        body=a.body if len(a.body) <= DESCRIBED_BYTES else None, body_size=len(a.body),
        request_type=CBOR,
        request_body=request_body if len(request_body) <= DESCRIBED_BYTES else None,
        note=note, who=who)
    log.record(lambda: describe(entry))
