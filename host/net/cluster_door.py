"""The front door in cluster mode: a request for an actor whose shard another node holds
is passed to that node, in one hop, and its answer comes back as it is.

- Who holds a shard comes from the lease keeper's view of the leases table
  (cluster/leases.py), refreshed every renewal. While nobody valid holds it (a node died
  and its lease has not expired yet, or the new owner is restoring), the request waits,
  up to about two lease TTLs, and is then refused with 503 and Retry-After.
- The owner may have changed since that view: a node that is passed a request for an
  actor it does not serve refuses it with `wk-cluster: not-owner` before running
  anything, and the passing node asks again. A node that cannot be reached (it died) is
  the same: nothing ran there.
- A node that went after it took the request is answered as with `--processes N`
  (PeerLost, 502): the request may have run.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from aiohttp import web

from ..core.holds import MAX_HOLD_MS
from ..errors import NotOwnerNow, PeerLost, PeerUnavailable
from ..wire import HOP_BY_HOP
from . import cluster_auth
from .peer_clients import Exchange, read_answer, request_bytes
from .peers import passed_answer

if TYPE_CHECKING:
    from ..core.config import HostConfig
    from ..core.host import Host

NOT_OWNER = "not-owner"
_MAX_HEAD = 1 << 20
_MAX_IDLE = 64
_POLL_S = 0.05


class NodeClients:
    """Kept TCP connections to the other nodes, in the front door's loop, and one
    HTTP/1.1 request and answer over them at a time, signed for the node that takes it."""

    def __init__(self, secret: bytes) -> None:
        self._secret = secret
        self._idle: dict[str, list[tuple[asyncio.StreamReader, asyncio.StreamWriter]]] = {}

    async def exchange(self, address: str, method: str, target: str,
                       headers: Iterable[tuple[str, str]] = (), body: bytes = b"") -> Exchange:
        """Raises PeerUnavailable if the node cannot be reached (nothing ran there),
        PeerLost if it went with the request."""
        signed = [*headers, (cluster_auth.HEADER,
                             cluster_auth.sign(self._secret, method, target, body))]
        data = request_bytes(method, target, signed, body)
        try:
            conn = await self._connection(address)
        except OSError as e:
            raise PeerUnavailable(f"node {address} did not answer ({type(e).__name__})"
                                  ) from None
        try:
            status, got, out, keep = await read_answer(conn, method, data)
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError,
                ValueError) as e:
            conn[1].close()
            raise PeerLost(f"node {address} went before it answered ({type(e).__name__}): "
                           "the request may have run") from None
        except BaseException:
            conn[1].close()
            raise
        idle = self._idle.setdefault(address, [])
        if keep and len(idle) < _MAX_IDLE:
            idle.append(conn)
        else:
            conn[1].close()
        return status, got, out

    async def _connection(self, address: str
                          ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        idle = self._idle.get(address, [])
        while idle:
            reader, writer = idle.pop()
            if not reader.at_eof() and not writer.is_closing():
                return reader, writer
            writer.close()
        host, _, port = address.rpartition(":")
        return await asyncio.open_connection(host, int(port), limit=_MAX_HEAD)

    async def close(self) -> None:
        for conns in self._idle.values():
            for _, writer in conns:
                writer.close()
        self._idle.clear()


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


async def to_owner(request: web.Request, actor_id: str, body: bytes
                   ) -> web.Response | None:
    """The owner's answer to `request`; None if this node serves the actor itself."""
    host: Host = request.app["host"]
    assert host.cluster is not None
    placement, config = host.cluster.placement, host.config
    if placement.owns(actor_id):
        return None
    if cluster_auth.is_hop(request):
        return not_owner(f"{request.path}")
    headers = [(k, v) for k, v in request.headers.items() if k.lower() not in HOP_BY_HOP
               and k.lower() != cluster_auth.HEADER]
    patience = time.monotonic() + 2 * config.lease_ttl_s + 2 * config.lease_renew_s
    while True:
        owner = placement.owner(actor_id)
        address = None if owner is None else placement.address_of(owner)
        if owner == placement.me and placement.owns(actor_id):
            return None
        if address is not None and owner != placement.me:
            try:
                status, got, answer = await asyncio.wait_for(request.app["nodes"].exchange(
                    address, request.method, request.raw_path, headers, body),
                    _answer_within_s(config))
            except PeerUnavailable:
                status, got, answer = 503, [("wk-cluster", NOT_OWNER)], b""
            except TimeoutError:
                raise PeerLost(f"node {address} did not answer in time (paused, or cut "
                               "off?): the request may have run there") from None
            if not _refused_unrun(got, status):
                return passed_answer(config, status, got, answer)
        if time.monotonic() > patience:
            raise PeerUnavailable("no node serves this actor's shard yet (a node is taking "
                                  "it over); retry shortly")
        await asyncio.sleep(_POLL_S)


def _answer_within_s(config: HostConfig) -> float:
    """The longest a served request takes: its event's wall budget, then the longest
    hold, with room to spare; a node that answers later is taken as gone."""
    return 2 * config.wall_budget_ms / 1000 + MAX_HOLD_MS / 1000 + 10


def _refused_unrun(got: list[tuple[str, str]], status: int) -> bool:
    return status == 503 and any(k.lower() == "wk-cluster" and v == NOT_OWNER
                                 for k, v in got)
