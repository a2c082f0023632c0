"""What the events need to call an actor served elsewhere: another process of this host
(`serve --processes N`) or another node of the cluster.

The events declare it (`CallsElsewhere`) and whoever builds a Host that has somewhere
else to call hands it an object that does it (host/net/remote_calls.py's
`RemoteCalls`): so the events know nothing of the network. A host of one process and
no cluster is given none: it serves every actor itself.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from ..errors import NotServedHere
from ..placement import Where
from ..types import ActorRef, Sender


class CallsElsewhere(Protocol):
    def call(self, ref: ActorRef, rec: Any, sender: Sender, stack: Iterable[ActorRef],
             deadline: float, where: Where) -> Any:
        """`ref`'s answer to the request record `rec`, as a response record, from where
        it is served (`where`, the placement's answer the caller got), with the chain of
        calls (`stack`) it comes through."""
        ...


def not_served_here(ref: ActorRef, where: Where) -> NotServedHere:
    """The refusal of an actor served elsewhere, by a host with no way to call there."""
    if where.process is not None:
        return NotServedHere(f"{ref} is served by process {where.process}, not this one")
    return NotServedHere(f"{ref} is not served by this host")
