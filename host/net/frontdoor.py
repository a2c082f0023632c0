"""The HTTP front door: aiohttp routing `/{class}/{id}/{path...}` to the actor's handle.

- The id segment is percent-decoded, so an id may hold any character the core allows
  ("/" as %2F). The rest of the path, decoded, is the request's `path`.
- A request carrying `Authorization: Bearer <admin token>` is an operator's: it may reach
  internal classes and its sender is "operator". The header is removed before the guest
  sees it. Any other request is the public's. Nothing else a client sends can change the
  sender, which travels beside the request, not in it.
- Every failure is a status with a one-line reason in the body, never a traceback; a
  host error's answer names its kind too (`wk-error-kind`, host/wire.py).
- A guest's answer reaches the client only if it is one HTTP can carry: a final status
  (200..599), header names that are tokens, values without control characters (C0, DEL,
  C1), at most `max_response_headers` of them in `max_response_header_bytes` on the wire,
  those the front door adds among them (host/wire.py). Any other answer becomes a 500
  naming the problem. Held answers and answers passed on from another process are
  checked the same way.
- A body is read only up to the cap: a declared length over it is refused (413) before
  any of it is read, and a body must arrive within `body_timeout_s` (408). A client that
  goes before its body has arrived is logged as one line, not as an error.
- An answer may ask to be held until the actor's next event (`wk-hold-ms`,
  host/events/holds.py): the request then waits here, on a future, and is delivered again
  when woken.
- With tracing on, a request has a SERVER span with HTTP's attributes, its events'
  spans its children; a client's W3C `traceparent` makes it a child of the client's
  span (host/tracing.py); a malformed one is ignored.
- `/_wk/...` is the host's own: health, the classes' builds, a class's actors, the audit
  log (operator only, host/net/audit.py), and, with `--fake-clock` only, moving the
  clock (tests). With `--fake-clock` only too, a workflow's `test` route (mocks, reads:
  host/net/test_route_gate.py) reaches the actor.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

from aiohttp import web

from .. import tracing
from ..core.host import Host
from ..errors import BadRequest, GuestFailed, HostError, Overloaded
from ..events.holds import HOLD_STATE, is_hold_header
from ..types import ActorRef, Request, Response, Sender
from ..wire import ERROR_KIND, answer_headers
from . import (
    audit,
    classes_route,
    clock_route,
    console,
    listing,
    metrics_route,
    openapi,
    test_route_gate,
)
from .audit_entry import is_protocol_read
from .bodies import expect_handler, read_body
from .cluster_door import cluster_middlewares
from .forward import pass_on
from .json_face import JSON, Face, NotInSubset, refusal
from .node_hop import NodeClients
from .operator import caller_of, ingress_allows, plain, read_only
from .peer_clients import PeerClients
from .peer_routes import add_peer_routes
from .tokens import INGRESS, Tokens

log = logging.getLogger("wkhost.http")

_PEER_WRAPPER_BYTES = 1 << 20


def make_app(host: Host, admin_token: str, peer_clients: PeerClients | None = None,
             for_peers: bool = False, tokens: Tokens | None = None) -> web.Application:
    """The front door. With `--processes N`, each process serves it to clients and, with
    the `/_wk/peer/...` routes added (`for_peers`), to the other processes
    (host/net/peers.py)."""
    # An actor's call into another process carries a body up to the cap with its
    # request's headers and the call chain around it: room for those too.
    cluster = host.cluster is not None  # the other nodes come to the clients' door
    room = _PEER_WRAPPER_BYTES if for_peers or cluster else 0
    app = web.Application(client_max_size=host.config.max_body_bytes + room,
                          middlewares=[_errors_middleware, *cluster_middlewares(host),
                                       audit.middleware])
    app["host"] = host
    app["body_cap"] = host.config.max_body_bytes + room
    app["token"] = admin_token  # the processes' own, to each other
    app["tokens"] = tokens or Tokens(admin_token)  # who a client's bearer token is
    app["peers"] = peer_clients
    app["for_peers"] = for_peers
    if host.cluster is not None:
        app["nodes"] = NodeClients(host.cluster.secret)
    if for_peers or cluster:
        add_peer_routes(app)
    app.router.add_get("/_wk/health", _health)
    listing.add_routes(app)
    classes_route.add_routes(app)
    audit.add_routes(app)
    if host.config.metrics_route:
        metrics_route.add_routes(app)
    if host.config.console:
        console.add_routes(app)
    clock_route.add_routes(app)
    openapi.add_routes(app)
    app.router.add_route("*", r"/{tail:[\s\S]*}", _to_actor,  # ids may hold a newline
                         expect_handler=expect_handler)
    return app


@web.middleware
async def _errors_middleware(request: web.Request, handler):  # type: ignore[no-untyped-def]
    try:
        return await handler(request)
    except HostError as e:
        extra = {"Retry-After": str(e.retry_after_s)} if isinstance(e, Overloaded) else {}
        return plain(e.http_status, e.reason, **{ERROR_KIND: e.kind}, **extra)
    except web.HTTPException as e:
        return plain(e.status, e.reason)
    except asyncio.CancelledError:
        raise
    except Exception:
        log.exception("unexpected failure serving %s %s", request.method, request.path)
        return plain(500, "internal error in the host (see its log)")


async def _to_actor(request: web.Request) -> web.Response:
    host: Host = request.app["host"]
    cls, actor_id, path = split_target(request.raw_path)
    if (gated := test_route_gate.refused(host, path)) is not None:
        return gated
    ref = host.actor_ref(cls, actor_id)
    where = host.placement.where(actor_id)  # asked once, passed on
    if not where.here:
        passed = await pass_on(request, ref, where, await read_body(request))
        if passed is not None:
            return passed
    operator = _as_operator(request)
    headers = [(k.lower(), v) for k, v in request.headers.items()
               if not (operator and k.lower() == "authorization") and not is_hold_header(k)]
    body = await read_body(request)
    face = Face.of(path, request.headers.get("Content-Type"), request.headers.get("Accept"))
    if face is not None:  # the protocol in JSON (json_face.py)
        try:
            headers, body = face.request(headers, body)
        except NotInSubset as e:
            return web.Response(status=400, body=refusal(str(e)), content_type=JSON)
    raw_query = request.raw_path.partition("?")[2]  # aiohttp's query_string is decoded
    req = Request(request.method, path, raw_query, headers, body)
    sender = Sender.operator() if operator else Sender.public()
    trace = tracing.from_client(request.headers)  # here, not where it was passed on
    if tracing.tracer is None:
        return await _serve(request, host, ref, req, sender, trace, face)
    with tracing.serving(request.method, cls, _http_attributes(request, cls),
                         trace) as span:
        out = await _serve(request, host, ref, req, sender, tracing.carrier_of(span), face)
        tracing.answered(span, out.status)
        return out


def _as_operator(request: web.Request) -> bool:
    """Whether the request reaches the actor as the operator: an operator's token, or a
    reader's at a protocol read route (a status, steps, a query); a reader's anywhere
    else is refused, as a token that may look and not act."""
    caller = caller_of(request)
    if caller is None:
        return False
    if caller.role == INGRESS:  # its class's starts and statuses, as the operator's
        if not ingress_allows(caller, request.method, request.raw_path):
            raise web.HTTPForbidden(reason=read_only(caller))
        return True
    if not caller.acts and not is_protocol_read(request.raw_path):
        raise web.HTTPForbidden(reason=read_only(caller))
    return True


async def _serve(request: web.Request, host: Host, ref: ActorRef, req: Request,
                 sender: Sender, trace: dict[str, str], face: Face | None) -> web.Response:
    """`req`'s answer, held (and delivered again) as long as the actor asks, its events
    in the trace `trace` (a carrier: the front door's span's, or the client's), in JSON
    if the client asked (`face`)."""
    resp = await asyncio.wrap_future(host.submit(_deliver, host, ref, req, sender, False,
                                                 trace))
    if resp.hold is not None:
        resp = await _held(host, ref, req, sender, resp, lambda: _gone(request), trace)
    if face is not None:
        resp.headers, resp.body = face.answer(resp.status, resp.headers, resp.body)
    return to_web(resp)


def _http_attributes(request: web.Request, cls: str) -> dict[str, Any]:
    """A request's attributes on its SERVER span, as OpenTelemetry's HTTP conventions
    name them (the query left out: it may hold secrets)."""
    url = request.url
    attributes: dict[str, Any] = {
        "http.request.method": request.method, "url.scheme": url.scheme,
        "url.path": request.path, "http.route": f"/{cls}/{{id}}/{{path}}",
        "server.address": url.host or "", "wkhost.class": cls}
    if url.port is not None:
        attributes["server.port"] = url.port
    if request.remote:
        attributes["client.address"] = request.remote
    if (agent := request.headers.get("User-Agent")) is not None:
        attributes["user_agent.original"] = agent[:256]
    return attributes


def _gone(request: web.Request) -> bool:
    """The client has hung up: nobody would read an answer delivered again."""
    return request.transport is None or request.transport.is_closing()


def _deliver(host: Host, ref: ActorRef, req: Request, sender: Sender, again: bool,
             trace: dict[str, str]) -> Response:
    """The actor's answer to `req`, checked as fit for a client (host/wire.py): a first
    answer, held or not, and each one to a request delivered again. Its event's span is
    a child of the client's `trace` (host/tracing.py's from_client), if any."""
    resp = tracing.run_in(trace, host.request, ref, req, sender, may_hold=True, again=again)
    config = host.config
    try:
        resp.headers = answer_headers(resp.status, resp.headers, config.max_response_headers,
                                      config.max_response_header_bytes)
    except GuestFailed as e:
        if resp.hold is not None:  # nobody will wait on it
            host.holds.discard(ref, resp.hold)
        log.warning("%s answered what no client can be sent: %s", ref, e)
        raise
    return resp


async def _held(host: Host, ref: ActorRef, req: Request, sender: Sender,
                resp: Response, gone: Callable[[], bool], trace: dict[str, str]) -> Response:
    """Wait for the actor's next event, then deliver the request again, until an answer
    is not held, the first hold's time is up, or the client has `gone` (host/events/holds.py)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + resp.hold_ms / 1000
    while resp.hold is not None:
        woken = resp.hold
        try:
            await asyncio.wait_for(asyncio.wrap_future(woken), max(0.0, deadline - loop.time()))
        except TimeoutError:
            host.holds.discard(ref, woken)
            break
        if host.holds.closed or gone():  # the host stops, or nobody waits any more
            break
        again = req
        if resp.hold_state is not None:
            again = Request(req.method, req.path, req.query,
                            [*req.headers, (HOLD_STATE, resp.hold_state)], req.body)
        try:
            delivery = host.submit(_deliver, host, ref, again, sender, True, trace)
        except Overloaded:  # the host is at its limit: the held answer stands
            break
        resp = await asyncio.wrap_future(delivery)
    resp.hold = None
    return resp


def split_target(raw_path: str) -> tuple[str, str, str]:
    """`/cls/id/rest?q` -> (cls, decoded id, "/" + decoded rest)."""
    raw = raw_path.split("?", 1)[0]
    parts = raw.split("/", 3)
    if len(parts) < 3 or not parts[1] or not parts[2]:
        raise BadRequest("the path must be /{class}/{id}/{path...}")
    try:
        actor_id = unquote(parts[2], errors="strict")
        rest = "/" + unquote(parts[3], errors="strict") if len(parts) > 3 else "/"
    except UnicodeDecodeError:
        raise BadRequest("the id or path is not valid percent-encoded UTF-8") from None
    return parts[1], actor_id, rest


def to_web(resp: Response) -> web.Response:
    """An answer whose headers `_deliver` has checked, for aiohttp to send."""
    out = web.Response(status=resp.status, body=resp.body)
    for k, v in resp.headers:
        out.headers.add(k, v)
    return out


async def _health(request: web.Request) -> web.Response:
    host: Host = request.app["host"]
    return web.json_response({"ok": True, "classes": sorted(host.classes),
                              "alarms_pending": host.scheduler.pending(),
                              "requests_held": host.holds.count(),
                              "instances_reused": host.spares.taken,
                              "process": host.config.partition.me,
                              "processes": host.config.partition.count})
