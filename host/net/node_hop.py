"""A request sent to the node that holds an actor's shard, at most once, whatever the
age of the sending node's view of the leases: the front door's hops
(net/cluster_door.py) and actors' calls to actors of other nodes (net/cluster_calls.py).

- Who holds a shard comes from the placement's answer (host/placement.py: the lease
  keeper's view, cluster/leases.py, with each lease's epoch and expiry), the caller's
  first, asked again only after an attempt ran nothing: a request is never sent to a
  node past its lease, nor to a node that is not live.
- A request is sent in two steps (`Expect: 100-continue`, then its body), and the node
  reads the whole body before anything runs. While the head waits, the view is watched:
  if it names another holder, the wait ends and the request goes to that holder, since
  without its body it cannot have run. Once the body is sent, the request is never sent
  elsewhere (it may have run there): a node that goes with it, or that loses the shard
  and is not live, is PeerLost at once, without waiting for it to come back.
- A refusal the sender says ran nothing (`unrun`: the node does not serve the actor
  now) is asked again, of the new holder as soon as the view names it.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, TypeVar

from ..errors import PeerLost, PeerUnavailable
from ..placement import NOBODY_YET, Where
from . import cluster_auth
from .peer_clients import Exchange, read_answer

if TYPE_CHECKING:
    from ..cluster.placement import ClusterPlacement

T = TypeVar("T")
_Stream = tuple[asyncio.StreamReader, asyncio.StreamWriter]
_Answer = tuple[int, list[tuple[str, str]], bytes, bool]  # read_answer's: and kept open
# How one attempt is sent: send(address, moved, gone), as NodeClients.pass_on takes them.
Send = Callable[[str, Callable[[], bool], Callable[[], bool]], Awaitable[Exchange | None]]

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


async def pass_to_owner(placement: ClusterPlacement, actor_id: str, where: Where,
                        send: Send, unrun: Callable[[Exchange], bool], patience_s: float,
                        end: float = math.inf) -> Exchange | None:
    """The answer of the node that holds `actor_id`'s shard, sent as `send` sends it,
    first where the placement's answer the caller got says (`where`); None if this node
    holds it. An attempt that ran nothing there (`send` answered None, or `unrun` is
    true of its answer), or none made (nobody yet), asks the placement again, and is
    made of the holder it names then. Raises PeerUnavailable once `patience_s` passed
    with no new holder to ask (each new holder has its own time to take the shard up),
    TimeoutError past `end` (monotonic), and what `send` raises (PeerLost: it may have
    run)."""
    give_up = time.monotonic() + patience_s
    asked: set[tuple[str, int | None]] = set()
    while True:
        if where.here:  # this node holds it now
            return None
        if where.node is not None and where.node != placement.me \
                and where.address is not None:
            lease = (where.node, where.epoch)
            if lease not in asked:  # a new holder: its own time to take the shard up
                asked.add(lease)
                give_up = max(give_up, time.monotonic() + patience_s)
            got = await send(where.address, moved(placement, actor_id, where),
                             gone(placement, actor_id, where))
            if got is not None and not unrun(got):
                return got
        if time.monotonic() > end:
            raise TimeoutError
        if time.monotonic() > give_up:
            raise PeerUnavailable("no node serves this actor's shard yet (a node is taking "
                                  "it over); retry shortly")
        await asyncio.sleep(_POLL_S)
        where = placement.where(actor_id)


def refused_unrun(got: Exchange) -> bool:
    """The front door's refusal of a hop for an actor its node does not serve now."""
    status, headers, _ = got
    return status == 503 and any(k.lower() == "wk-cluster" and v == NOT_OWNER
                                 for k, v in headers)


def moved(placement: ClusterPlacement, actor_id: str, sent_to: Where
          ) -> Callable[[], bool]:
    """Whether the placement no longer names `sent_to`'s lease as the actor's (another
    holder, this node, or that lease expired)."""
    return lambda: not _same_lease(placement.where(actor_id), sent_to)


def gone(placement: ClusterPlacement, actor_id: str, sent_to: Where
         ) -> Callable[[], bool]:
    """Whether another holder took the actor's shard from `sent_to`'s node, and that
    node is not live (no heartbeat within a TTL: paused, or cut off). A node that handed
    the shard over is live, and its answer is waited for."""
    node = sent_to.node
    assert node is not None

    def gone() -> bool:
        now = placement.where(actor_id)
        return now != NOBODY_YET and not _same_lease(now, sent_to) \
            and placement.address_of(node) is None
    return gone


def _same_lease(now: Where, sent_to: Where) -> bool:
    """The same node at the same epoch: a new epoch is a new holder, even of the same
    node (it lost the shard and took it again)."""
    return not now.here and now.node == sent_to.node and now.epoch == sent_to.epoch


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
