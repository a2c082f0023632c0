"""Lease keepers (host/cluster/leases.py) on a real PostgreSQL: three in one process,
each with a store of its own, as three nodes would be; lease times of about a second.
Every wait is a bounded poll for an outcome."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator

import pytest
from wkhost.cluster.leases import LeaseKeeper
from wkhost.cluster.placement import SHARDS, preferred
from wkhost.cluster.store import ClusterStore
from wkhost.testing.postgres import PgServer

TTL, RENEW, DEADLINE = 1.0, 0.1, 0.7
NAMES = ["n1", "n2", "n3"]


class Node:
    def __init__(self, url: str, name: str) -> None:
        self.name = name
        self.store = ClusterStore(url)
        self.store.connect_check()
        self.gained: list[tuple[int, int]] = []
        self.lost: list[int] = []
        self._lock = threading.Lock()
        self.keeper = LeaseKeeper(self.store, name, f"127.0.0.1:{NAMES.index(name) + 1}",
                                  {"c": "0" * 64}, TTL, RENEW, DEADLINE,
                                  on_gained=self._gained, on_lost=self._lost)

    def _gained(self, shard: int, epoch: int) -> None:
        with self._lock:
            self.gained.append((shard, epoch))

    def _lost(self, shard: int) -> None:
        with self._lock:
            self.lost.append(shard)

    def shards(self) -> set[int]:
        return set(self.keeper.held())


@pytest.fixture
def nodes(pg_url: str) -> Iterator[dict[str, Node]]:
    made = {name: Node(pg_url, name) for name in NAMES}
    for node in made.values():
        node.keeper.start()
    yield made
    for node in made.values():
        node.keeper.stop()
        node.store.close()


def share(names: list[str]) -> dict[str, set[int]]:
    return {n: {s for s in range(SHARDS) if preferred(s, names) == n} for n in names}


def wait_until(ok: Callable[[], bool], what: str, limit_s: float = 30.0) -> None:
    end = time.monotonic() + limit_s
    while not ok():
        assert time.monotonic() < end, f"not reached in {limit_s} s: {what}"
        time.sleep(0.05)


def settled(nodes: dict[str, Node], names: list[str]) -> bool:
    """Every node of `names` holds exactly its preferred share, as the store says."""
    want = share(names)
    owners = nodes[names[0]].store.owners()
    return all(nodes[n].shards() == want[n] for n in names) and all(
        owners[s][0] == preferred(s, names) and owners[s][2] for s in range(SHARDS))


def test_three_keepers_hold_every_shard_once_spread_evenly(
        nodes: dict[str, Node]) -> None:
    wait_until(lambda: settled(nodes, NAMES), "each node holding its share")
    held = [nodes[n].shards() for n in NAMES]
    assert set().union(*held) == set(range(SHARDS)) and sum(map(len, held)) == SHARDS
    assert all(70 <= len(h) <= 100 for h in held), [len(h) for h in held]
    assert nodes["n1"].keeper.address_of("n2") == "127.0.0.1:2"


def test_a_stopped_keepers_shards_go_to_the_others_and_its_epochs_are_refused(
        nodes: dict[str, Node], pg_url: str) -> None:
    wait_until(lambda: settled(nodes, NAMES), "each node holding its share")
    n3 = nodes["n3"]
    old, lost_before = n3.keeper.held(), len(n3.lost)  # a late round may have lost some
    n3.keeper.stop(release=False)  # stops renewing, as if it had died
    assert n3.shards() == set() and sorted(n3.lost[lost_before:]) == sorted(old)
    wait_until(lambda: settled(nodes, ["n1", "n2"]), "n1 and n2 taking n3's shards")
    assert n3.store.renew("n3", old, TTL) == set()
    n3.store.close()
    taken = {n: {s: e for s, e in nodes[n].keeper.held().items() if s in old}
             for n in ("n1", "n2")}
    assert all(e > old[s] for t in taken.values() for s, e in t.items())

    back = nodes["n3"] = Node(pg_url, "n3")  # the fixture stops this one
    back.keeper.start()
    wait_until(lambda: settled(nodes, NAMES), "n3 taking its share back by hand-over")
    again = back.keeper.held()
    assert set(again) == set(old)
    for name, gave in taken.items():  # handed back: their epochs are over too
        assert all(again[s] > e for s, e in gave.items())
        assert nodes[name].store.renew(name, gave, TTL) == set()


def test_a_keeper_restarted_before_its_leases_expire_takes_them_at_new_epochs(
        nodes: dict[str, Node], pg_url: str) -> None:
    wait_until(lambda: settled(nodes, NAMES), "each node holding its share")
    old = nodes["n2"].keeper.held()
    nodes["n2"].keeper.stop(release=False)
    nodes["n2"].store.close()
    back = nodes["n2"] = Node(pg_url, "n2")
    back.keeper.start()
    wait_until(lambda: set(back.keeper.held()) == set(old), "n2 holding its shards again")
    assert all(back.keeper.held()[s] > e for s, e in old.items())
    assert back.store.renew("n2", old, TTL) == set()
    wait_until(lambda: settled(nodes, NAMES), "the three settled again")


def test_without_postgresql_shards_end_at_their_deadline_and_come_back_at_new_epochs(
        pg_url: str, pg_server: PgServer, caplog: pytest.LogCaptureFixture) -> None:
    node = Node(pg_url, "n1")
    node.keeper.start()
    try:
        wait_until(lambda: len(node.keeper.held()) == SHARDS, "n1 holding every shard")
        old = node.keeper.held()
        with caplog.at_level(logging.INFO, logger="wkhost"):
            pg_server.kill()
            wait_until(lambda: node.keeper.held() == {}, "the deadline passing")
            # A set: on a busy machine a late round may have let some shards go and
            # taken them again before the kill, so they were lost twice.
            wait_until(lambda: set(node.lost) == set(range(SHARDS)), "on_lost for all")
            pg_server.restart()
            wait_until(lambda: len(node.keeper.held()) == SHARDS, "n1 taking them again")
        again = node.keeper.held()
        assert all(again[s] > e for s, e in old.items())
        said = [r.getMessage() for r in caplog.records]
        assert len([m for m in said if "cannot be reached" in m]) == 1
        assert len([m for m in said if "answers again" in m]) == 1
    finally:
        node.keeper.stop()
        node.store.close()
