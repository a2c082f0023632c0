"""The console's reads, as JSON under /_wk/console/api/ (a session needed: else 401).

    GET classes                      each class: access, a workflow class or not, actors
    GET actors?cls=C&<listing's>     /_wk/actors/C's page (filters, order, paging, count)
    GET instance?cls=C&id=I          status, steps (attempts and values), emitted events,
                                     children; {"error"} with the instance's refusal
    GET version?cls=C&id=I           {"version": a marker that moves when the instance's
                                     database changes, or null where this process
                                     cannot tell}: no event (storage/change_marker.py)
    GET schedules                    the schedules of `--schedules`'s class: each one's
                                     name and version (from the index and its files: no
                                     event); {"class": null} when none is served
    GET schedule?id=S                one schedule's definition, state and newest fires
    GET query?cls=C&id=I&name=N&arg=JSON   a query handler's answer
    GET audit?target=C[/I]&<audit's>  the audit log's rows (GET /_wk/audit's filter)

Each reuses what the operator's routes do: the listing (host/net/listing.py), the
workflow protocol's read routes (calls.py), the audit log (host/net/audit.py).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web
from multidict import MultiDict

from ...core.host import Host
from ...errors import BadRequest, HostError
from ...storage.change_marker import change_marker
from ...storage.paths import db_path
from .. import audit, listing
from ..peers import list_page
from .calls import PROTOCOL, SCHEDULE, Answer, call, error_of
from .session import refusal, session_of

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
_STEP_PAGES = 10  # of 100 positions each: what one instance page shows at most
_EVENTS = 500
_CHILD = "child "
_ONE = MultiDict({"limit": "1"})  # a class's count, its first page of one
# A workflow's states, as wkguest.workflow.status.STATES has them (the server does not
# import the guest's runner for a tuple; tests/unit/test_console_states.py holds the two
# the same).
WORKFLOW_STATES = ("running", "waiting", "compensating", "paused", "parked", "completed",
                   "failed", "cancelled", "terminated")
_SCHEDULES = MultiDict({"limit": "1000"})  # the schedules the console shows, by name


def add_routes(app: web.Application, prefix: str) -> None:
    for name, handler in (("classes", _classes), ("actors", _actors),
                          ("instance", _instance), ("version", _version),
                          ("schedules", _schedules), ("schedule", _schedule),
                          ("query", _query), ("audit", _audit)):
        app.router.add_get(f"{prefix}/api/{name}", _guarded(handler))


def _guarded(handler: Handler) -> Handler:
    async def guarded(request: web.Request) -> web.StreamResponse:
        if session_of(request) is None:
            return json_answer({"error": "no session: log in to the console"}, 401)
        try:
            return await handler(request)
        except (BadRequest, ValueError) as e:
            return json_answer({"error": str(e)}, 400)
    return guarded


def json_answer(doc: Any, status: int = 200) -> web.Response:
    return web.json_response(doc, status=status, headers={"Cache-Control": "no-store"})


def refused(request: web.Request) -> web.Response | None:
    """The answer to an operator's request that may not go on (session.py's `refusal`):
    401, which asks to log in, only without a valid session; one with a session that may
    not act (a reader's, another origin, no CSRF token) is forbidden. None: it may."""
    why = refusal(request)
    if why is None:
        return None
    return json_answer({"error": why}, 401 if session_of(request) is None else 403)


def _param(request: web.Request, name: str) -> str:
    value = request.query.get(name, "")
    if not value:
        raise BadRequest(f"give {name}")
    return value


async def _classes(request: web.Request) -> web.Response:
    host = request.app["host"]
    out = []
    for name in sorted(host.classes):
        cls = host.classes[name]
        page = await list_page(request.app, listing.query_from(name, _ONE), True)
        workflow = PROTOCOL in cls.protocols
        out.append({"name": name, "access": cls.access, "actors": page.count,
                    "workflow": workflow,
                    "states": await _by_state(request.app, name) if workflow else {}})
    return json_answer({"classes": out})


async def _by_state(app: web.Application, cls: str) -> dict[str, int]:
    """How many of the class's instances are in each state (those in none left out):
    the index's counts, no event."""
    pages = await asyncio.gather(*(
        list_page(app, listing.query_from(cls, MultiDict({"status": s, "limit": "1"})), True)
        for s in WORKFLOW_STATES))
    return {s: p.count for s, p in zip(WORKFLOW_STATES, pages, strict=True) if p.count}


async def _actors(request: web.Request) -> web.Response:
    cls = _param(request, "cls")
    if cls not in request.app["host"].classes:
        return json_answer({"error": f"no actor class named {cls!r}"}, 404)
    try:
        query = listing.query_from(cls, request.query, request.app["host"].clock.now_ms())
    except ValueError as e:
        raise BadRequest(str(e)) from None
    page = await list_page(request.app, query, request.query.get("count") == "1")
    return json_answer(page.doc())


async def _version(request: web.Request) -> web.Response:
    cls, actor_id = _param(request, "cls"), _param(request, "id")
    return json_answer({"version": version_of(request.app["host"], cls, actor_id)})


def version_of(host: Host, cls: str, actor_id: str) -> str | None:
    """The instance's change marker, read off its files on this machine: None for one
    served by another node (its files are there), or not a valid actor."""
    try:
        ref = host.actor_ref(cls, actor_id)
    except HostError:
        return None
    where = host.placement.where(ref.id)
    if not where.here and where.process is None:
        return None
    return change_marker(db_path(host.config.data_dir, ref.cls, ref.id))


async def _instance(request: web.Request) -> web.Response:
    cls, actor_id = _param(request, "cls"), _param(request, "id")
    app = request.app
    # Before the reads: a change while they run moves it again, and is read next time.
    version = version_of(app["host"], cls, actor_id)
    status, events = await asyncio.gather(call(app, cls, actor_id, "status", {"input": True}),
                                          call(app, cls, actor_id, "events",
                                               {"after": 0, "limit": _EVENTS}))
    if (why := error_of(status)) is not None:
        return json_answer({"error": why}, status.status)
    steps, more = await _steps(app, cls, actor_id)
    return json_answer({"cls": cls, "id": actor_id, "version": version,
                        "status": status.doc, "steps": steps,
                        "steps_more": more, "events": _events(events),
                        "children": children_of(steps)})


async def _steps(app: web.Application, cls: str, actor_id: str
                 ) -> tuple[list[dict[str, Any]], bool]:
    """The instance's positions, with attempts and values, up to _STEP_PAGES pages."""
    out: list[dict[str, Any]] = []
    start: int | None = 0
    for _ in range(_STEP_PAGES):
        page = await call(app, cls, actor_id, "steps",
                          {"from": start, "limit": 100, "attempts": True, "values": True,
                           "value_bytes": 1000})
        if error_of(page) is not None or not isinstance(page.doc, dict):
            break
        out.extend(page.doc.get("steps") or [])
        start = page.doc.get("next")
        if start is None:
            return out, False
    return out, start is not None


def _events(a: Answer) -> dict[str, Any]:
    if error_of(a) is not None or not isinstance(a.doc, dict):
        return {"events": [], "more": False, "error": error_of(a)}
    return {"events": a.doc.get("events") or [], "more": a.doc.get("more") is True}


def children_of(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The children it started: its positions named `child CLS/ID` (a step that starts
    it, then a wait for its end), each child once, with the state of its last one."""
    found: dict[str, dict[str, Any]] = {}
    for st in steps:
        name = st.get("name") or ""
        if not name.startswith(_CHILD) or "/" not in name:
            continue
        cls, _, actor_id = name[len(_CHILD):].partition("/")
        found[name] = {"cls": cls, "id": actor_id, "kind": st.get("kind"),
                       "state": st.get("state"), "pos": st.get("pos")}
    return list(found.values())


async def _schedules(request: web.Request) -> web.Response:
    host: Host = request.app["host"]
    cls = host.config.schedule_class
    if not cls:
        return json_answer({"class": None, "schedules": [], "more": False})
    page = await list_page(request.app, listing.query_from(cls, _SCHEDULES), False)
    names = [r.id for r in page.rows]
    return json_answer({"class": cls, "more": page.next is not None, "schedules": [
        {"name": n, "version": version_of(host, cls, n)} for n in names]})


async def _schedule(request: web.Request) -> web.Response:
    cls = request.app["host"].config.schedule_class
    if not cls:
        return json_answer({"error": "no schedule class is served (wkhost serve "
                                     "--schedules)"}, 404)
    name = _param(request, "id")
    a = await call(request.app, cls, name, "describe", {"fires": 5}, SCHEDULE)
    if (why := error_of(a)) is not None:
        return json_answer({"error": why}, a.status)
    return json_answer({"class": cls, "version": version_of(request.app["host"], cls, name),
                        **a.doc})


async def _query(request: web.Request) -> web.Response:
    cls, actor_id, name = (_param(request, k) for k in ("cls", "id", "name"))
    try:
        arg = json.loads(request.query.get("arg") or "null")
    except ValueError:
        raise BadRequest("arg: give a JSON value") from None
    a = await call(request.app, cls, actor_id, "query", {"name": name, "arg": arg})
    if (why := error_of(a)) is not None:
        return json_answer({"error": why}, a.status)
    return json_answer(a.doc)


async def _audit(request: web.Request) -> web.Response:
    log = audit.log_of(request.app)  # the front door's own log: one per process
    if log is None:
        return json_answer({"error": "the audit log is not open"}, 503)
    f = audit.read_filter(request.query, request.app["host"].clock.now_ms())
    unflushed = await audit.flush_others(request.app)
    entries, nxt = await asyncio.wrap_future(log.read(f))
    return json_answer({"entries": [e.doc() for e in entries], "next": nxt,
                        "unflushed": unflushed})
