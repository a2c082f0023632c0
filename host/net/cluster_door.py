"""The front door in cluster mode: a request for an actor whose shard another node holds
is passed to that node, in one hop, and its answer comes back as it is.

- Who holds a shard comes from the lease keeper's view of the leases table
  (cluster/leases.py), read every round, with each lease's expiry: a request is never
  passed to a node past its lease, nor to a node that is not live. While nobody holds
  it (a node died or paused and its lease expired, and no node has taken the shard
  yet), the request waits, and is refused with 503 and Retry-After once about two
  lease TTLs passed with no new holder to ask.
- The owner may have changed since that view: a node that is passed a request for an
  actor it does not serve refuses it with `wk-cluster: not-owner` before running
  anything, and the passing node asks again, the new holder as soon as the view names
  it. A node that cannot be reached (it died) is the same: nothing ran there.
- At most once: a request is sent in two steps (`Expect: 100-continue`, then its body),
  and the node reads the whole body before anything runs. While the head waits, the
  view is watched: if it names another holder (the node paused, or died, and another
  took the shard), the wait ends and the request goes to that holder, since without its
  body it cannot have run. Once the body is sent, the request may run there, and is
  never sent elsewhere: re-sending it would run it twice if the node had committed its
  write just before it paused (its writes after the takeover are refused by the fence,
  but not those before). So a node that goes with the request, or that loses the
  shard to another node and is no longer live (paused, or cut off) while it has it, is
  answered as with `--processes N` (PeerLost, 502: the request may have run), without
  waiting for it to come back; a node that handed the shard over is live, and answers.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any

from aiohttp import web

from ..errors import NotOwnerNow
from ..events.holds import MAX_HOLD_MS
from ..placement import Where
from . import cluster_auth
from .node_hop import NOT_OWNER, NodeClients, pass_to_owner, refused_unrun
from .peer_clients import Exchange

if TYPE_CHECKING:
    from ..config import HostConfig
    from ..core.host import Host

__all__ = ["cluster_middlewares", "not_owner", "to_owner"]


def cluster_middlewares(host: Host) -> list[Any]:
    """In cluster mode: the check of what the other nodes pass (net/cluster_auth.py)."""
    if host.cluster is None:
        return []
    return [cluster_auth.middleware(host.cluster.secret), _hop_refused]


@web.middleware
async def _hop_refused(request: web.Request, handler):  # type: ignore[no-untyped-def]
    """A hop whose actor this node found it does not hold, before anything ran: the
    refusal the passing node asks again on (not a 503 it would pass to its client)."""
    try:
        return await handler(request)
    except NotOwnerNow:
        if not cluster_auth.is_hop(request):
            raise
        return not_owner(request.path)


def not_owner(what: str) -> web.Response:
    """The refusal of a hop for an actor this node does not serve: nothing ran."""
    return web.Response(status=503, text=f"{what} is not served by this node now\n",
                        headers={"wk-cluster": NOT_OWNER, "Retry-After": "1"})


async def to_owner(app: web.Application, actor_id: str, where: Where, method: str,
                   target: str, headers: Iterable[tuple[str, str]], body: bytes
                   ) -> Exchange | None:
    """The answer of the node that serves `actor_id`, starting from the placement's
    answer the caller got (`where`), to a client's request or the console's (never a
    hop: net/forward.py refuses those), unchecked; None if this node serves the actor.
    `headers`: a client's without this connection's hop-by-hop ones (net/forward.py
    leaves them out), or the console's own."""
    host: Host = app["host"]
    assert host.cluster is not None
    config = host.config
    kept = [(k, v) for k, v in headers if k.lower() != cluster_auth.HEADER]
    patience_s = 2 * config.lease_ttl_s + 2 * config.lease_renew_s
    nodes: NodeClients = app["nodes"]

    def send(address: str, moved: Callable[[], bool], gone: Callable[[], bool]
             ) -> Awaitable[Exchange | None]:
        return nodes.pass_on(address, method, target, kept, body, moved, gone,
                             _answer_within_s(config), config.lease_renew_s / 2)

    return await pass_to_owner(host.cluster.placement, actor_id, where, send,
                               refused_unrun, patience_s)


def _answer_within_s(config: HostConfig) -> float:
    """The longest a served request takes: its event's wall budget, then the longest
    hold, with room to spare; a node that answers later is taken as gone."""
    return 2 * config.wall_budget_ms / 1000 + MAX_HOLD_MS / 1000 + 10


