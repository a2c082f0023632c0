"""Serving as a node of a cluster (`wkhost serve --cluster postgresql://... --node-id N`):
the host is built with its part in the cluster (core/cluster_node.py) and with the other
nodes for its actors' calls (net/cluster_calls.py). docs/cluster.md has the design."""

from __future__ import annotations

from pathlib import Path

from ..clock import Clock
from ..config import HostConfig
from ..core.cluster_node import ClusterNode, class_hashes, discard_working_copies
from ..core.host import Host
from .cluster_calls import ClusterCalls
from .remote_calls import RemoteCalls


def build_node_host(config: HostConfig, actors: list[tuple[str, Path]], clock: Clock,
                    address: str) -> Host:
    """A host that is this node of the cluster. The data directory's working copies are
    removed first: they are of an earlier run, and this one takes its shards at new
    epochs (core/cluster_node.py)."""
    discard_working_copies(config.data_dir, config.partition.host_dir(config.data_dir))
    node = ClusterNode(config, address, class_hashes(actors))
    calls = ClusterCalls(node.placement, node.secret, config.lease_renew_s / 2)
    return Host(config, clock, RemoteCalls(nodes=calls), cluster=node)
