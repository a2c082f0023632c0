"""The terms the lease keeper (cluster/leases.py) works under: what it needs of the
cluster's store (`LeaseStore`, which cluster/store.py's ClusterStore is), and the rule
its three times must follow (`check_times`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Protocol


class LeaseStore(Protocol):
    """What the keeper uses of the cluster's store (cluster/store.py)."""

    def join(self, node_id: str, address: str, classes: dict[str, str]) -> None: ...

    def heartbeat(self, node_id: str) -> None: ...

    def leave(self, node_id: str) -> None: ...

    def live_nodes(self, within_s: float) -> Mapping[str, str]: ...

    def acquire(self, shard: int, node_id: str, ttl_s: float) -> int | None: ...

    def renew(self, node_id: str, held: dict[int, int], ttl_s: float) -> Collection[int]: ...

    def release(self, node_id: str, held: dict[int, int]) -> None: ...

    def leases_left(self) -> Mapping[int, tuple[str | None, int, float]]: ...


def check_times(ttl_s: float, renew_s: float, deadline_s: float) -> None:
    """Raises ValueError unless 0 < renew < deadline < ttl: a node must renew at least
    once before its deadline, and stop serving before its lease can expire."""
    if not 0 < renew_s < deadline_s < ttl_s:
        raise ValueError(
            f"lease times must be 0 < --lease-renew ({renew_s:g}) < --lease-deadline "
            f"({deadline_s:g}) < --lease-ttl ({ttl_s:g}): a node renews before its "
            "deadline, and stops serving at its deadline, before its lease expires")
