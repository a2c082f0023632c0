"""An actor's call to an actor served elsewhere: the one remote-call object the host is
given (the events' `CallsElsewhere`, events/remote.py), which picks the transport by the
placement's answer (host/placement.py).

- Another process of this host (`Where.process`): a blocking POST over that process's
  Unix socket (net/peers.py's `Peers`), with its rules: PeerUnavailable if nothing was
  sent, PeerLost once it was.
- Another node, or nobody yet (cluster mode): the signed hop (net/cluster_calls.py's
  `ClusterCalls`, net/cluster_auth.py), at most once, first to the holder the answer
  names, then to the one the placement names at each new attempt, until the caller's
  deadline.
- Without the transport the answer asks for, the actor is refused (NotServedHere).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..events.remote import not_served_here
from ..placement import Where
from ..types import ActorRef, Sender

if TYPE_CHECKING:
    from .cluster_calls import ClusterCalls
    from .peers import Peers


class RemoteCalls:
    def __init__(self, processes: Peers | None = None,
                 nodes: ClusterCalls | None = None) -> None:
        self._processes = processes
        self._nodes = nodes

    def call(self, ref: ActorRef, rec: Any, sender: Sender, stack: Iterable[ActorRef],
             deadline: float, where: Where) -> Any:
        """`ref`'s answer to the request record `rec`, as a response record, from where
        it is served (`where`, the placement's answer the caller got: not asked again),
        with the chain of calls (`stack`) it comes through. Raises the HostError the
        other side raised, or the transport's (PeerUnavailable, PeerLost,
        DeadlineExceeded; NotOwnerNow: the callee has come here, nothing ran)."""
        if where.process is not None:
            if self._processes is None:
                raise not_served_here(ref, where)
            return self._processes.call_process(where.process, ref, rec, sender, stack,
                                                deadline)
        if self._nodes is None:
            raise not_served_here(ref, where)
        return self._nodes.call(ref, rec, sender, stack, deadline, where)
