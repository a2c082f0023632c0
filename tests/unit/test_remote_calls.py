"""The one remote-call object (host/net/remote_calls.py) picks the transport the
placement's answer names: another process's Unix socket (the real one, with no process
listening: refused before anything was sent), or the cluster's hop, or, without the
transport asked for, a refusal."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from wkhost.errors import NotServedHere, PeerUnavailable
from wkhost.interfaces.records import record
from wkhost.net.peers import Peers
from wkhost.net.remote_calls import RemoteCalls
from wkhost.partition import Partition
from wkhost.placement import NOBODY_YET
from wkhost.types import ActorRef, Sender

CALLER = ActorRef("app", "caller")


def _rec() -> object:
    return record(method="GET", path="/", query="", headers=[], body="")


def _other(partition: Partition) -> str:
    return next(f"id-{i}" for i in range(1000)
                if not partition.where(f"id-{i}").here)


def test_another_process_is_called_over_its_socket(tmp_path: Path) -> None:
    partition = Partition(0, 2)
    calls = RemoteCalls(processes=Peers(tmp_path, partition))
    ref = ActorRef("app", _other(partition))
    where = partition.where(ref.id)
    assert where.process == 1
    with pytest.raises(PeerUnavailable, match="process 1, which serves app/"):
        calls.call(ref, _rec(), Sender.of_actor(CALLER), [CALLER], time.monotonic() + 5, where)


def test_a_host_without_a_transport_refuses(tmp_path: Path) -> None:
    partition = Partition(0, 2)
    ref = ActorRef("app", _other(partition))
    with pytest.raises(NotServedHere, match="served by process 1, not this one"):
        RemoteCalls().call(ref, _rec(), Sender.of_actor(CALLER), [CALLER],
                           time.monotonic() + 5, partition.where(ref.id))


def test_another_node_without_the_cluster_transport_is_refused() -> None:
    """The node transport is the cluster's (net/cluster.py gives it; its real calls are
    tests/cluster/test_cluster_calls_e2e.py's): a host without it serves no other node's
    actor."""
    with pytest.raises(NotServedHere, match="app/x is not served by this host"):
        RemoteCalls().call(ActorRef("app", "x"), _rec(), Sender.of_actor(CALLER),
                           [CALLER], time.monotonic() + 5, NOBODY_YET)
