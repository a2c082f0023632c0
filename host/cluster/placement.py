"""Which node serves which actor, in cluster mode: the shape of partition.Partition, the
answers from this node's lease keeper (cluster/leases.py).

- An actor's shard is the first byte of its id's sha256 (partition.shard_of): the same
  byte that names its database's directory, so a shard's files stay together.
- Which node a shard should be on is decided by rendezvous hashing: every node scores
  sha256(f"{shard}/{node}") and the highest wins. Each node computes it alone from the
  list of live nodes, shards spread evenly, and losing a node moves only the shards it
  had (each to the node that scored second for it); a node that comes back gets the
  same shards again.
- Who does serve a shard is who holds its lease; the preferred node is only where the
  keepers move it.

`ClusterPlacement.where` is the placement port's answer in cluster mode
(host/placement.py), and its only question of an actor's place.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Protocol

from ..partition import shard_of
from ..placement import HERE, NOBODY_YET, Where

SHARDS = 256

__all__ = ["SHARDS", "ClusterPlacement", "Leases", "preferred"]


def preferred(shard: int, nodes: Iterable[str]) -> str | None:
    """The node that shard `shard` should be on, of `nodes`; None if there are none."""
    best: tuple[bytes, str] | None = None
    for node in nodes:
        score = hashlib.sha256(f"{shard}/{node}".encode()).digest()
        if best is None or score > best[0]:
            best = (score, node)
    return None if best is None else best[1]


class Leases(Protocol):
    """What placement reads of the lease keeper."""

    def epoch(self, shard: int) -> int | None: ...

    def lease(self, shard: int) -> tuple[str, int] | None: ...

    def address_of(self, node_id: str) -> str | None: ...


class ClusterPlacement:
    """What the host asks about an actor's place. Each answer is read from the keeper's
    state without a lock or a round trip: it is asked on every event."""

    def __init__(self, keeper: Leases, me: str) -> None:
        """A cluster member is one process (docs/cluster.md): an actor of a shard this
        node holds is served here."""
        self._keeper = keeper
        self.me = me

    def where(self, actor_id: str) -> Where:
        """This node; or the node holding the actor's shard, with its address and the
        lease's epoch; or nobody yet. A lease of this node's past its deadline is not
        here: the node is named, as the lease does."""
        shard = shard_of(actor_id)
        if self._keeper.epoch(shard) is not None:
            return HERE
        got = self._keeper.lease(shard)
        if got is None:
            return NOBODY_YET
        node, epoch = got
        return Where(False, node=node, address=self._keeper.address_of(node), epoch=epoch)

    def address_of(self, node_id: str) -> str | None:
        """Where a live node takes requests; None for one that is not live (no heartbeat
        within a TTL): what a hop that has sent its request watches (net/node_hop.py)."""
        return self._keeper.address_of(node_id)
