"""The one forwarder: a request for an actor served elsewhere, passed on where the
placement's answer says (host/placement.py, asked once by the front door or the
console), and the answer brought back.

Each transport keeps its own rule:
- Another process of this host (`Where.process`): the request as it came, over that
  process's Unix socket (net/peer_clients.py); PeerLost once it is sent and the process
  goes. A request passed on once is never passed on again: a process that is passed a
  request for an actor it does not serve refuses it (NotServedHere).
- Another node, or nobody yet (cluster mode): the signed hop to the shard's holder, at
  most once, starting from the answer given, waiting while nobody holds the shard
  (net/cluster_door.py, net/node_hop.py). A hop is never passed on again: a node passed
  a request for an actor it does not serve refuses it with `wk-cluster: not-owner`, on
  which the passing node asks again.
- A client's answer's headers are checked again within the caps the other side checked
  them against, with room for what its front door added (host/wire.py): what comes
  from another process or node is not taken on trust.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from aiohttp import web

from ..errors import NotServedHere
from ..placement import Where
from ..types import ActorRef
from ..wire import HOP_BY_HOP, answer_headers
from . import cluster_auth, cluster_door
from .peer_clients import Exchange, PeerClients

if TYPE_CHECKING:
    from ..config import HostConfig

# What the other process's front door adds to an answer beside the guest's headers
# (Date, Server, Content-Type, Content-Length): room for them in the caps it is checked
# against again here.
_ADDED_HEADERS = 4
_ADDED_HEADER_BYTES = 512


async def pass_on(request: web.Request, ref: ActorRef, where: Where, body: bytes
                  ) -> web.Response | None:
    """The answer to `request`, a client's whose body this process has read, from where
    `ref` is served, checked; None if, in cluster mode, this node has come to serve it
    meanwhile. The hop-by-hop headers are this connection's (the body is read, `Expect:
    100-continue` answered), not passed on."""
    config: HostConfig = request.app["host"].config
    if where.process is not None:
        if request.app["for_peers"]:  # passed on once already: never again
            raise NotServedHere(f"{ref} was passed to process {config.partition.me}, "
                                "which does not serve it")
    elif cluster_auth.is_hop(request):
        return cluster_door.not_owner(request.path)
    headers = [(k, v) for k, v in request.headers.items() if k.lower() not in HOP_BY_HOP]
    got = await exchange(request.app, ref, where, request.method, request.raw_path,
                         headers, body)
    return None if got is None else passed_answer(config, *got)


async def exchange(app: web.Application, ref: ActorRef, where: Where, method: str,
                   target: str, headers: Iterable[tuple[str, str]], body: bytes
                   ) -> Exchange | None:
    """`method target` with `headers` and `body`, sent where `ref` is served (`where`:
    another process, or another node or nobody yet), by that transport, and its answer,
    unchecked; None if, in cluster mode, this node has come to serve `ref` meanwhile."""
    if where.process is not None:
        clients: PeerClients = app["peers"]
        return await clients.exchange(where.process, method, target, headers, body)
    return await cluster_door.to_owner(app, ref.id, where, method, target, headers, body)


def passed_answer(config: HostConfig, status: int, got: list[tuple[str, str]],
                  answer: bytes) -> web.Response:
    """Another process's (or node's) answer, its headers checked again within the caps
    it was checked against, with room for what its front door added (host/wire.py)."""
    got = answer_headers(status, got, config.max_response_headers + _ADDED_HEADERS,
                         config.max_response_header_bytes + _ADDED_HEADER_BYTES,
                         from_guest=False)
    out = web.Response(status=status, body=answer)
    for k, v in got:
        out.headers.add(k, v)
    return out
