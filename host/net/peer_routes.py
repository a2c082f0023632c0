"""The routes only a process's Unix socket serves, for the other processes of `wkhost
serve --processes N` (net/peers.py asks them): an actor's call into this process, this
process's share of a listing, and the test clock. They trust what they are told (an actor
as the sender, the chain of calls): only who may read the actors' files reaches the socket.
A call is for an actor this process serves, asked once as it comes in: one of another
process's is refused (NotServedHere), never passed on; in cluster mode the other nodes
come here too, and a callee whose shard this node does not hold is refused by its event
(NotOwnerNow, replication/restore.py), which the calling node asks again on.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

import cbor2
from aiohttp import web

from .. import errors, tracing
from ..errors import HostError, NotServedHere
from ..events.event import Chain
from ..interfaces.records import record
from ..storage.listing import ListQuery
from ..types import ActorRef, Sender
from .peers import CBOR

if TYPE_CHECKING:
    from ..core.host import Host


def add_peer_routes(app: web.Application) -> None:
    app.router.add_post("/_wk/peer/call", _call)
    app.router.add_get("/_wk/peer/actors/{cls}", _actors)
    app.router.add_post("/_wk/peer/list", _list)
    app.router.add_post("/_wk/peer/clock", _clock)


def _cbor(doc: Any) -> web.Response:
    return web.Response(body=cbor2.dumps(doc), content_type=CBOR)


async def _call(request: web.Request) -> web.Response:
    host: Host = request.app["host"]
    m = cbor2.loads(await request.read())
    try:
        ref = host.actor_ref(m["cls"], m["id"])
        where = host.placement.where(ref.id)  # who serves it: asked once, here
        if where.process is not None:  # a call passed on once is never passed on again
            raise NotServedHere(f"{ref} is served by process {where.process}, not this one")
        rec = record(method=m["method"], path=m["path"], query=m["query"],
                     headers=[tuple(h) for h in m["headers"]],
                     body=bytes(m["body"]).decode("latin-1"))
        sender = Sender.of_actor(ActorRef(*m["sender"]))
        chain = Chain(stack=[ActorRef(c, i) for c, i in m["chain"]])
        deadline = time.monotonic() + float(m["timeout_s"])  # one clock for the machine
        out = await asyncio.wrap_future(host.submit(
            tracing.run_in, m.get("trace"), host.call_here, ref, rec, sender, chain, deadline))
    except HostError as e:
        return _cbor({"error": errors.wire_kind(e), "message": str(e)})
    return _cbor({"status": out.status, "headers": [list(h) for h in out.headers],
                  "body": out.body.encode("latin-1")})


async def _actors(request: web.Request) -> web.Response:
    host: Host = request.app["host"]
    return _cbor(host.list_actors(request.match_info["cls"], request.query.get("after", ""),
                                  int(request.query.get("limit", "1000"))))


async def _list(request: web.Request) -> web.Response:
    host: Host = request.app["host"]
    m = cbor2.loads(await request.read())
    rows, count = host.list_page(query_of(m["q"]), bool(m["count"]))
    return _cbor({"rows": [asdict(r) for r in rows], "count": count})


async def _clock(request: web.Request) -> web.Response:
    testing = request.app["host"].testing
    if testing.fake_clock is None:
        return web.Response(status=404, text="no test clock here\n")
    now = testing.set_clock(int(request.query["at"]))
    settle_s = int(request.query.get("settle_ms", "0")) / 1000
    settled = True
    if settle_s:
        settled = await asyncio.to_thread(request.app["host"].scheduler.wait_settled, settle_s)
    return _cbor({"now": now, "settled": settled})


def query_of(doc: dict[str, Any]) -> ListQuery:
    """A ListQuery from its fields as CBOR carried them (lists for tuples)."""
    return ListQuery(**{**doc, "statuses": tuple(doc["statuses"]),
                        "labels": tuple(tuple(kv) for kv in doc["labels"])})
