"""The audit log of operator actions: recorded by the front door's middleware, read at
`GET /_wk/audit` (operators only), across every process of `--processes N`.

- Recorded: each request that carries the admin token and is an action (host/net/
  audit_entry.py says which: every one but the reads, by route), once it is answered,
  refusals and failures too (4xx, 5xx, with why). Not recorded: the reads (status,
  steps, list, events, query...), the public's requests, a request with a wrong token
  (it is refused, 401, before it reaches anything; the public cannot fill the log), and
  what the processes pass each other (the process a client reached records it).
- The middleware only queues what it saw, once the answer is made and before it is
  sent, so a client that reads the log next finds its action; describing it and
  writing it happen on the log's own thread (host/storage/audit_log.py).
- A client may mark a request with `wk-audit-note: TEXT` (up to 500 characters kept):
  its row keeps the note. `POST /_wk/audit/note` with {"note": TEXT, "target":
  "CLASS[/ID]"} (JSON) records a line of its own, the action "note": what a bulk
  operation records for itself, beside a row for each target's request.
- `GET /_wk/audit?since=&until=&target=CLASS[/ID]&action=&limit=&before=`: newest first,
  `limit` rows (1-1000, default 100) and `next`, the cursor of the next page (for
  `before`). since/until: host-clock ms; a negative one counts back from the host's now.
  Each other process is first asked to write what it has queued; one that does not
  answer is named in `unflushed` (its last rows may be missing, not the others').
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from aiohttp import web

from ..errors import BadRequest, HostError, PeerLost, PeerUnavailable
from ..storage.audit_log import AuditLog, Entry, Filter, parse_cursor
from ..storage.paths import check_class, check_id
from .audit_entry import DESCRIBED_BYTES, Answered, describe, is_action
from .operator import caller_of, is_operator, may_read, plain
from .tokens import INGRESS

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
NOTE = "wk-audit-note"
_NOTE_CHARS = 500
_MOST_A_PAGE = 1000


def add_routes(app: web.Application) -> None:
    """The log's routes, and its opening and closing with the app. The app that serves
    the other processes (`for_peers`) shares this process's log and only flushes it."""
    app.on_startup.append(_open)
    app.on_cleanup.append(_close)
    if app["for_peers"]:
        app.router.add_post("/_wk/peer/audit/flush", _flush_here)
        return
    app.router.add_get("/_wk/audit", _read)
    app.router.add_post("/_wk/audit/note", _note)


@web.middleware
async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Records each operator action as it is answered (see the module's doc)."""
    if (request.app["for_peers"] or "Authorization" not in request.headers
            or not is_action(request.method, request.raw_path)):
        return await handler(request)
    try:
        caller = caller_of(request)
    except web.HTTPUnauthorized:
        return await handler(request)
    if caller is None or not (caller.acts or caller.role == INGRESS):  # refused where
        # it is handled (a reader's action): nothing done
        return await handler(request)
    loop = asyncio.get_running_loop()
    started, at = loop.time(), request.app["host"].clock.now_ms()
    seen = _Seen(request, at, started, caller.name)
    try:
        resp = await handler(request)
    except HostError as e:
        seen.answered(e.http_status, "text/plain", e.reason.encode())
        raise
    except web.HTTPException as e:
        seen.answered(e.status, "text/plain", (e.reason or "").encode())
        raise
    except asyncio.CancelledError:
        seen.answered(499, "text/plain", b"no answer: the request was cut (it may have run)")
        raise
    except Exception:
        seen.answered(500, "text/plain", b"internal error in the host (see its log)")
        raise
    body = resp.body if isinstance(resp, web.Response) else None
    seen.answered(resp.status, resp.content_type,
                  body if isinstance(body, (bytes, bytearray)) else b"")
    return resp


class _Seen:
    def __init__(self, request: web.Request, at: int, started: float, who: str) -> None:
        self.request, self.at, self.started, self.who = request, at, started, who

    def answered(self, status: int, content_type: str, body: bytes | bytearray) -> None:
        log = log_of(self.request.app)
        if log is None:  # the app was not started (never so in `wkhost serve`)
            return
        r = self.request
        read = getattr(r, "_read_bytes", None)  # the body, if the handler read it whole
        took = round((asyncio.get_running_loop().time() - self.started) * 1000)
        a = Answered(
            at=self.at, took_ms=took, process=r.app["host"].config.partition.me,
            method=r.method, raw_path=r.raw_path, status=status, content_type=content_type,
            body=bytes(body) if len(body) <= DESCRIBED_BYTES else None, body_size=len(body),
            request_type=r.headers.get("Content-Type", ""),
            request_body=read if isinstance(read, bytes) and len(read) <= DESCRIBED_BYTES
            else None, note=r.headers.get(NOTE), who=self.who)
        log.record(lambda: describe(a))


# -- one log per process, shared by its two apps ---------------------------------------
class _Held:
    def __init__(self, log: AuditLog) -> None:
        self.log = log
        self.apps = 0


_LOGS: dict[int, _Held] = {}  # by id(host): a Host is neither hashable by value nor kept here


def log_of(app: web.Application) -> AuditLog | None:
    """The front door's audit log (one per process), or None before it is open."""
    held = _LOGS.get(id(app["host"]))
    return None if held is None else held.log


async def _open(app: web.Application) -> None:
    host = app["host"]
    held = _LOGS.get(id(host))
    if held is None:
        path = host.config.data_dir / "_host" / "audit.db"
        held = _LOGS[id(host)] = _Held(AuditLog(path, host.clock.now_ms))
    held.apps += 1


async def _close(app: web.Application) -> None:
    key = id(app["host"])
    held = _LOGS.get(key)
    if held is None:
        return
    held.apps -= 1
    if held.apps == 0:
        del _LOGS[key]
        await asyncio.to_thread(held.log.close)


# -- the routes -------------------------------------------------------------------------
async def _read(request: web.Request) -> web.Response:
    if not may_read(request):
        return plain(403, "the audit log is for operators and readers (send a token)")
    log = log_of(request.app)
    if log is None:
        return plain(503, "the audit log is not open")
    f = read_filter(request.query, request.app["host"].clock.now_ms())
    unflushed = await flush_others(request.app)
    entries, nxt = await asyncio.wrap_future(log.read(f))
    return web.json_response({"entries": [e.doc() for e in entries], "next": nxt,
                              "unflushed": unflushed})


def read_filter(q: Mapping[str, str], now_ms: int) -> Filter:
    """The query's filter; BadRequest naming the parameter that is wrong."""
    cls, _, actor_id = q.get("target", "").partition("/")
    try:
        if cls:
            check_class(cls)
        if actor_id:
            check_id(actor_id)
    except BadRequest as e:
        raise BadRequest(f"target: {e}") from None
    before = None
    if q.get("before"):
        try:
            before = parse_cursor(q["before"])
        except ValueError:
            raise BadRequest("before must be a page's cursor (AT.ID), as `next` gives "
                             "it") from None
    limit = _whole(q, "limit", 100)
    if not 1 <= (limit or 0) <= _MOST_A_PAGE:
        raise BadRequest(f"limit takes 1 to {_MOST_A_PAGE}")
    return Filter(since=_when(q, "since", now_ms), until=_when(q, "until", now_ms),
                  cls=cls or None, actor_id=actor_id or None,
                  action=q.get("action") or None, before=before, limit=limit or 100)


def _whole(q: Mapping[str, str], name: str, default: int | None = None) -> int | None:
    if not q.get(name):
        return default
    try:
        return int(q[name])
    except ValueError:
        raise BadRequest(f"{name} must be a whole number") from None


def _when(q: Mapping[str, str], name: str, now_ms: int) -> int | None:
    ms = _whole(q, name)
    return None if ms is None else now_ms + ms if ms < 0 else ms


async def flush_others(app: web.Application) -> list[int]:
    """Ask every other process to write what it has queued; those that do not answer."""
    partition = app["host"].config.partition
    unflushed = []
    for process in range(partition.count):
        if process == partition.me:
            continue
        try:
            status, _, _ = await app["peers"].exchange(process, "POST",
                                                       "/_wk/peer/audit/flush")
        except (PeerUnavailable, PeerLost):
            status = 0
        if status != 200:
            unflushed.append(process)
    return unflushed


async def _flush_here(request: web.Request) -> web.Response:
    log = log_of(request.app)
    if log is not None:
        await asyncio.wrap_future(log.flushed())
    return web.json_response({"flushed": log is not None})


async def _note(request: web.Request) -> web.Response:
    """A line of the client's own (a bulk operation's), recorded as the action "note"."""
    caller = caller_of(request)
    if caller is None or not is_operator(request):
        return plain(403, "the audit log is for operators (send the admin token)")
    log = log_of(request.app)
    if log is None:
        return plain(503, "the audit log is not open")
    doc = _note_doc(await request.read())
    note, target = doc["note"], doc.get("target", "")
    f = read_filter({"target": target}, 0)  # checks the target as a read's
    entry = Entry(at=request.app["host"].clock.now_ms(), took_ms=0,
                  process=request.app["host"].config.partition.me, action="note",
                  method="POST", cls=f.cls or "", actor_id=f.actor_id or "",
                  path="/_wk/audit/note", status=200, result="noted",
                  note=note[:_NOTE_CHARS], who=caller.name)
    log.record(lambda: entry)
    return web.json_response({"recorded": True})


def _note_doc(body: bytes) -> dict[str, Any]:
    try:
        doc = json.loads(body)
    except ValueError:
        raise BadRequest("a note is a JSON map: {\"note\": TEXT, \"target\": "
                         "\"CLASS[/ID]\"}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("note"), str) or not doc["note"]:
        raise BadRequest("note: give a non-empty text")
    if not isinstance(doc.get("target", ""), str):
        raise BadRequest("target: give CLASS or CLASS/ID")
    return doc
