"""Calls into actors of the other processes of one host (`serve --processes N`).

core defines what it needs, and whoever builds a Host for several processes hands it an
object that does it (host/net/peers.py's `Peers`): so core knows nothing of the network.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from ..errors import NotServedHere
from ..partition import Partition
from ..placement import Where
from ..types import ActorRef, Sender


class RemoteCalls(Protocol):
    def call(self, ref: ActorRef, rec: Any, sender: Sender, stack: Iterable[ActorRef],
             deadline: float, where: Where | None = None) -> Any:
        """`ref`'s answer to the request record `rec`, as a response record, from the
        process that serves it, with the chain of calls (`stack`) it comes through."""
        ...


class NoRemote:
    """A host with no link to other processes: an actor it does not serve is refused."""

    def __init__(self, partition: Partition) -> None:
        self._partition = partition

    def call(self, ref: ActorRef, rec: Any, sender: Sender, stack: Iterable[ActorRef],
             deadline: float, where: Where | None = None) -> Any:
        raise NotServedHere(f"{ref} is served by process "
                            f"{self._partition.owner(ref.id)}, not this one")
