"""Who serves an actor: the one question the front door and an actor's call ask, once
per request, before anything runs (`Placement.where`).

Two implementations answer it:
- process mode (`serve --processes N`): partition.Partition, here or another process of
  this host;
- cluster mode: cluster/placement.py's ClusterPlacement, another node (its address and
  its lease's epoch), nobody yet (a node is taking the shard over), or this node (a
  cluster member is one process).

The answer is a value (`Where`), passed on with the request: the forwarder
(net/forward.py) and an actor's call to another process or node (net/remote_calls.py)
act on it without asking again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class Where:
    """Where an actor is served, as seen now.

    - `here`: by this process (of this node).
    - else `process`: by that process of this host (process mode);
    - else `node` (with its `address` and its lease's `epoch`): by that node;
    - else nobody yet: no node holds the actor's shard validly (cluster mode).
    """

    here: bool
    process: int | None = None
    node: str | None = None
    address: str | None = None
    epoch: int | None = None


HERE = Where(True)
NOBODY_YET = Where(False)


class Placement(Protocol):
    def where(self, actor_id: str) -> Where:
        """Who serves `actor_id` now. Read without a lock or a round trip: it is asked
        on every request."""
        ...
