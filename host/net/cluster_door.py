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

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

from aiohttp import web

from ..core.holds import MAX_HOLD_MS
from ..errors import NotOwnerNow, PeerLost, PeerUnavailable
from ..wire import HOP_BY_HOP
from . import cluster_auth
from .peer_clients import Exchange, read_answer
from .peers import passed_answer

if TYPE_CHECKING:
    from ..cluster.placement import ClusterPlacement
    from ..core.config import HostConfig
    from ..core.host import Host

T = TypeVar("T")
_Stream = tuple[asyncio.StreamReader, asyncio.StreamWriter]
_Answer = tuple[int, list[tuple[str, str]], bytes, bool]  # read_answer's: and kept open

NOT_OWNER = "not-owner"
_MAX_HEAD = 1 << 20
_MAX_IDLE = 64
_POLL_S = 0.05


class NodeClients:
    """Kept TCP connections to the other nodes, in the front door's loop, and one
    HTTP/1.1 request and answer over them at a time, signed for the node that takes it.

    A request is sent in two steps (`Expect: 100-continue`): its head, then, once the
    node has read the head and answered `100 Continue`, its body. The node reads the
    whole body before anything runs, so a request whose body was never sent has not
    run there, and may be sent elsewhere."""

    def __init__(self, secret: bytes) -> None:
        self._secret = secret
        self._idle: dict[str, list[_Stream]] = {}

    async def pass_on(self, address: str, method: str, target: str,
                      headers: Iterable[tuple[str, str]], body: bytes,
                      moved: Callable[[], bool], gone: Callable[[], bool],
                      within_s: float, watch_s: float) -> Exchange | None:
        """The node's answer; None if the request did not run there: the node could not
        be reached, or it went, or `moved()` became true (another node serves the actor
        now), before its body was sent. Once the body is sent, raises PeerLost if the
        node goes, if `gone()` becomes true (it lost the shard and is not live: paused,
        or cut off), or if it does not answer within `within_s` (it may have run).
        `gone()` is looked at every `watch_s` (a request may be held for minutes)."""
        signed = [*headers, ("expect", "100-continue"), ("transfer-encoding", "chunked"),
                  (cluster_auth.HEADER, cluster_auth.sign(self._secret, method, target, body))]
        end = time.monotonic() + within_s
        try:  # a paused node's listen queue may be full: a connect that waits is watched
            conn = await _watched(self._connection(address), moved, end, _POLL_S)
        except (OSError, TimeoutError):
            return None
        if conn is None:
            return None
        try:
            got = await self._exchange(conn, address, method,
                                       _head(method, target, signed), _chunked(body),
                                       moved, gone, end, watch_s)
        except BaseException:  # cancelled too (the client went): the state is unknown
            conn[1].close()
            raise
        if got is None:
            conn[1].close()
            return None
        status, answer_headers, out, keep = got
        idle = self._idle.setdefault(address, [])
        if keep and len(idle) < _MAX_IDLE:
            idle.append(conn)
        else:
            conn[1].close()
        return status, answer_headers, out

    async def _exchange(self, conn: _Stream, address: str, method: str, head: bytes,
                        body: bytes, moved: Callable[[], bool], gone: Callable[[], bool],
                        end: float, watch_s: float) -> _Answer | None:
        reader, writer = conn
        writer.write(head)
        try:
            interim = await _watched(reader.readuntil(b"\r\n\r\n"), moved, end, _POLL_S)
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            return None  # went, or closed an idle connection, before the body was sent
        except TimeoutError:
            raise PeerUnavailable(f"node {address} did not take the request in time (it "
                                  "did not run there); retry shortly") from None
        if interim is None or not interim.startswith(b"HTTP/1.1 100 "):
            # Another node serves the actor now, or the node refused the head (only
            # the expect handler answers before the body): nothing ran there.
            return None
        try:
            got = await _watched(read_answer(conn, method, body), gone, end, watch_s)
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError,
                ValueError) as e:
            raise PeerLost(f"node {address} went before it answered ({type(e).__name__}): "
                           "the request may have run") from None
        except TimeoutError:
            raise PeerLost(f"node {address} did not answer in time (paused, or cut off?): "
                           "the request may have run there") from None
        if got is None:
            raise PeerLost(f"node {address} lost the actor's shard to another node while "
                           "it had the request (paused, or cut off?): the request may have "
                           "run there, and none of its writes from then on is kept")
        return got

    async def _connection(self, address: str) -> _Stream:
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
    patience_s = 2 * config.lease_ttl_s + 2 * config.lease_renew_s
    give_up = time.monotonic() + patience_s
    asked: set[tuple[str, int]] = set()
    while True:
        lease = placement.lease_of(actor_id)
        if lease is not None and lease[0] == placement.me:
            if placement.owns(actor_id):
                return None
        elif lease is not None and (address := placement.address_of(lease[0])) is not None:
            if lease not in asked:  # a new holder: its own time to take the shard up
                asked.add(lease)
                give_up = max(give_up, time.monotonic() + patience_s)
            got = await request.app["nodes"].pass_on(
                address, request.method, request.raw_path, headers, body,
                _moved(placement, actor_id, lease), _gone(placement, actor_id, lease),
                _answer_within_s(config), config.lease_renew_s / 2)
            if got is not None and not _refused_unrun(got[1], got[0]):
                return passed_answer(config, *got)
        if time.monotonic() > give_up:
            raise PeerUnavailable("no node serves this actor's shard yet (a node is taking "
                                  "it over); retry shortly")
        await asyncio.sleep(_POLL_S)


def _moved(placement: ClusterPlacement, actor_id: str, lease: tuple[str, int]
           ) -> Callable[[], bool]:
    """Whether the view no longer names `lease` as the actor's (another holder, or
    that lease expired)."""
    return lambda: placement.lease_of(actor_id) != lease


def _gone(placement: ClusterPlacement, actor_id: str, lease: tuple[str, int]
          ) -> Callable[[], bool]:
    """Whether another holder took the actor's shard from `lease`'s node, and that node
    is not live (no heartbeat within a TTL: paused, or cut off). A node that handed the
    shard over is live, and its answer is waited for."""
    def gone() -> bool:
        now = placement.lease_of(actor_id)
        return now is not None and now != lease and placement.address_of(lease[0]) is None
    return gone


async def _watched(step: Awaitable[T], stop: Callable[[], bool], end: float,
                   every_s: float) -> T | None:
    """`step`'s result; None if `stop()` became true first (looked at every `every_s`:
    the view changes once a round); TimeoutError past `end` (monotonic)."""
    task = asyncio.ensure_future(step)
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=every_s)
            if done:
                return task.result()
            if stop():
                return None
            if time.monotonic() > end:
                raise TimeoutError
    finally:
        if not task.done():
            task.cancel()


def _head(method: str, target: str, headers: list[tuple[str, str]]) -> bytes:
    lines = [f"{method} {target} HTTP/1.1\r\n"]
    if not any(k.lower() == "host" for k, _ in headers):
        lines.append("host: peer\r\n")
    lines += [f"{k}: {v}\r\n" for k, v in headers]
    return "".join(lines).encode("utf-8", "surrogateescape") + b"\r\n"


def _chunked(body: bytes) -> bytes:
    """The body as one chunk and the last: even an empty body is sent after the head,
    so that the node waits for it before anything runs."""
    first = f"{len(body):x}\r\n".encode() + body + b"\r\n" if body else b""
    return first + b"0\r\n\r\n"


def _answer_within_s(config: HostConfig) -> float:
    """The longest a served request takes: its event's wall budget, then the longest
    hold, with room to spare; a node that answers later is taken as gone."""
    return 2 * config.wall_budget_ms / 1000 + MAX_HOLD_MS / 1000 + 10


def _refused_unrun(got: list[tuple[str, str]], status: int) -> bool:
    return status == 503 and any(k.lower() == "wk-cluster" and v == NOT_OWNER
                                 for k, v in got)
