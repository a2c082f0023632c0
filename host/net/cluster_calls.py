"""An actor's call to an actor that another node of the cluster serves: a POST of the
call to that node's `/_wk/peer/call`, signed (net/cluster_auth.py), sent as the front
door passes a request (net/node_hop.py), the caller's event thread waiting for it.

- It goes to the node the placement's answer names (the caller's, asked again only
  after an attempt ran nothing), never to one past its lease or not live; while
  nobody holds the callee's shard, or the node asked says it does not serve the callee
  (NotOwnerNow, or not restored yet: nothing ran), or cannot be reached, the call asks
  again, the new holder as soon as the view names it, until the caller's deadline; if
  that holder is this node, NotOwnerNow, and the call is served here (events/requests.py).
- At most once: while the node has not taken the call's head (`Expect: 100-continue`),
  a new holder in the view ends the wait and the call goes there. Once its body is
  sent the call is never sent again: a node that goes with it, or that loses the
  callee's shard and is not live (paused, cut off), is answered PeerLost at once (the
  call may have run), as the door answers 502, instead of waiting for the deadline.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from typing import Any, TypeVar

import cbor2

from ..cluster.placement import ClusterPlacement
from ..errors import (
    DeadlineExceeded,
    HostError,
    LeaseLost,
    NotOwnerNow,
    PeerLost,
    PeerUnavailable,
    error_class,
)
from ..placement import Where
from ..types import ActorRef, Sender
from .node_hop import NodeClients, pass_to_owner, refused_unrun
from .peer_clients import Exchange
from .peers import CBOR, call_answer, call_body

T = TypeVar("T")
_TARGET = "/_wk/peer/call"


class ClusterCalls:
    """Blocking calls for event threads, sent from a loop of their own (started with the
    first call): the node connections are the front door's kind (NodeClients)."""

    def __init__(self, placement: ClusterPlacement, secret: bytes, watch_s: float = 0.1
                 ) -> None:
        self._placement = placement
        self._secret = secret
        self._watch_s = watch_s  # how often a sent call looks at the view (half a renewal)
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._nodes: NodeClients | None = None

    def call(self, ref: ActorRef, rec: Any, sender: Sender, stack: Iterable[ActorRef],
             deadline: float, where: Where) -> Any:
        """`ref`'s answer, from the node that serves it, first where the placement's
        answer the caller got says (`where`)."""
        if deadline <= time.monotonic():
            raise DeadlineExceeded(f"no node answered for {ref} by the event's deadline")
        chain, asked = list(stack), [""]
        try:
            got = self._run(self._to_owner(ref, rec, sender, chain, deadline, where, asked))
        except TimeoutError:
            raise DeadlineExceeded(f"no node answered for {ref} by the event's deadline"
                                   ) from None
        except (PeerLost, PeerUnavailable) as e:
            if time.monotonic() < deadline:
                raise
            raise DeadlineExceeded(f"{ref} did not answer by the event's deadline") from e
        if got is None:  # came here since the caller asked: nothing ran elsewhere
            raise NotOwnerNow(f"{ref} has just come to this node; retry")
        status, _, data = got
        if status != 200:  # not the peer route's answer: it may have run
            raise HostError(f"node {asked[-1]} answered {status}: "
                            f"{data[:200].decode(errors='replace').strip()}")
        return call_answer(cbor2.loads(data))

    async def _to_owner(self, ref: ActorRef, rec: Any, sender: Sender,
                        chain: list[ActorRef], deadline: float, where: Where,
                        asked: list[str]) -> Exchange | None:
        """The callee's node's answer (`asked` ends with its address); None if this
        node serves the callee."""
        assert self._nodes is not None
        nodes = self._nodes

        def send(address: str, moved: Callable[[], bool], gone: Callable[[], bool]
                 ) -> Awaitable[Exchange | None]:
            asked.append(address)
            timeout = max(0.0, deadline - time.monotonic())
            body = call_body(ref, rec, sender, chain, timeout)
            return nodes.pass_on(address, "POST", _TARGET, [("content-type", CBOR)], body,
                                 moved, gone, timeout, self._watch_s)

        patience_s = max(0.0, deadline - time.monotonic())  # the deadline ends it first
        return await pass_to_owner(self._placement, ref.id, where, send, _unrun,
                                   patience_s, deadline)

    def _run(self, step: Coroutine[Any, Any, T]) -> T:
        with self._lock:
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                self._nodes = NodeClients(self._secret)
                threading.Thread(target=self._loop.run_forever, name="wk-cluster-calls",
                                 daemon=True).start()
        return asyncio.run_coroutine_threadsafe(step, self._loop).result()


def _unrun(got: Exchange) -> bool:
    """The callee's node refused the call before it ran: it does not serve the callee
    now (NotOwnerNow; or the door's own refusal), or has not restored it yet. A
    LeaseLost that is not NotOwnerNow ran, and its write was refused: not sent again."""
    status, _, data = got
    if refused_unrun(got):
        return True
    if status != 200:
        return False
    try:
        kind = cbor2.loads(data).get("error")
    except (cbor2.CBORDecodeError, AttributeError):
        return False
    if kind is None:
        return False
    cls = error_class(str(kind))
    return issubclass(cls, NotOwnerNow) or (issubclass(cls, PeerUnavailable)
                                            and not issubclass(cls, LeaseLost))
