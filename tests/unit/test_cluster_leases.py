"""The lease keeper (host/cluster/leases.py) and placement (host/cluster/placement.py),
against an in-memory store with the real one's rules and one fake clock for both the
store and the nodes. tests/cluster/test_leases_pg.py runs keepers on a real PostgreSQL."""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable

import pytest
from wkhost.cluster.connections import StoreUnavailable
from wkhost.cluster.leases import FALLBACK_TTLS, HANDOVER_PER_ROUND, LeaseKeeper
from wkhost.cluster.placement import SHARDS, ClusterPlacement, preferred
from wkhost.partition import shard_of
from wkhost.placement import NOBODY_YET

TTL, RENEW, DEADLINE = 10.0, 2.0, 7.0


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class FakeStore:
    """The store's lease rules: acquire only if expired or already mine (a new epoch
    either way), renew and release only at the same owner and epoch."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.leases = {s: (None, 0, -math.inf) for s in range(SHARDS)}
        self.beats: dict[str, float] = {}
        self.addresses: dict[str, str] = {}
        self.down = False
        self.renew_takes = 0.0  # seconds a renewal takes to answer

    def _up(self) -> None:
        if self.down:
            raise StoreUnavailable("connection refused")

    def join(self, node_id: str, address: str, classes: dict[str, str]) -> None:
        self._up()
        self.addresses[node_id] = address
        self.beats[node_id] = self.clock.now

    def heartbeat(self, node_id: str) -> None:
        self._up()
        self.beats[node_id] = self.clock.now

    def leave(self, node_id: str) -> None:
        self._up()
        self.beats.pop(node_id, None)

    def live_nodes(self, within_s: float) -> dict[str, str]:
        self._up()
        return {n: self.addresses[n] for n, at in self.beats.items()
                if self.clock.now - at <= within_s}

    def acquire(self, shard: int, node_id: str, ttl_s: float) -> int | None:
        self._up()
        owner, epoch, expires = self.leases[shard]
        if expires > self.clock.now and owner != node_id:
            return None
        self.leases[shard] = (node_id, epoch + 1, self.clock.now + ttl_s)
        return epoch + 1

    def renew(self, node_id: str, held: dict[int, int], ttl_s: float) -> set[int]:
        self._up()
        self.clock.now += self.renew_takes
        kept = {s for s, e in held.items() if self.leases[s][:2] == (node_id, e)}
        for s in kept:
            self.leases[s] = (node_id, held[s], self.clock.now + ttl_s)
        return kept

    def release(self, node_id: str, held: dict[int, int]) -> None:
        self._up()
        for s, e in held.items():
            if self.leases[s][:2] == (node_id, e):
                self.leases[s] = (node_id, e, -math.inf)

    def owners(self) -> dict[int, tuple[str | None, int, bool]]:
        self._up()
        return {s: (o, e, exp > self.clock.now) for s, (o, e, exp) in self.leases.items()}

    def leases_left(self) -> dict[int, tuple[str | None, int, float]]:
        self._up()
        return {s: (o, e, max(0.0, exp - self.clock.now))
                for s, (o, e, exp) in self.leases.items()}

    def held_by(self, node_id: str) -> set[int]:
        return {s for s, (o, _, exp) in self.leases.items()
                if o == node_id and exp > self.clock.now}


class Node:
    """A keeper with a record of its callbacks."""

    def __init__(self, store: FakeStore, name: str, **times: float) -> None:
        self.gained: list[tuple[int, int]] = []
        self.lost: list[int] = []
        t = {"ttl_s": TTL, "renew_s": RENEW, "deadline_s": DEADLINE, **times}
        self.keeper = LeaseKeeper(store, name, f"{name}:80", {"c": "00"},
                                  on_gained=self._gained, on_lost=self.lost.append,
                                  clock=store.clock, **t)
        self.keeper.join()

    def _gained(self, shard: int, epoch: int) -> None:
        assert self.keeper.epoch(shard) is None  # the host restores before it is held
        self.gained.append((shard, epoch))

    def shards(self) -> set[int]:
        return set(self.keeper.held())


@pytest.fixture
def store() -> FakeStore:
    return FakeStore(Clock())


def rounds(store: FakeStore, nodes: list[Node], n: int) -> None:
    for _ in range(n):
        for node in nodes:
            node.keeper.tick()
        store.clock.now += RENEW


def split(names: list[str]) -> dict[str, set[int]]:
    return {n: {s for s in range(SHARDS) if preferred(s, names) == n} for n in names}


def test_lease_times_out_of_order_are_refused_with_the_rule() -> None:
    store = FakeStore(Clock())
    for ttl, renew, deadline in ((10, 2, 10), (10, 2, 12), (10, 7, 7), (10, 0, 5)):
        with pytest.raises(ValueError, match=r"--lease-renew .* < --lease-deadline"):
            Node(store, "a", ttl_s=ttl, renew_s=renew, deadline_s=deadline)


def test_three_nodes_share_the_shards_evenly_and_a_loss_moves_only_its_own() -> None:
    for names in (["a", "b", "c"], ["node-1", "node-2", "node-3"], ["x", "y", "z"]):
        shares = split(names)
        assert all(70 <= len(s) <= 100 for s in shares.values()), names
        assert set().union(*shares.values()) == set(range(SHARDS))
        after = split(names[:2])
        for n in names[:2]:
            assert shares[n] <= after[n]  # kept everything, gained part of the lost one's


def test_a_node_takes_only_the_expired_shards_it_is_preferred_for(store: FakeStore) -> None:
    a, b = Node(store, "a"), Node(store, "b")
    rounds(store, [a, b], 2)
    want = split(["a", "b"])
    assert a.shards() == want["a"] and b.shards() == want["b"]
    assert store.held_by("a") == want["a"] and store.held_by("b") == want["b"]
    assert sorted(s for s, _ in a.gained) == sorted(want["a"])
    assert a.lost == [] and b.lost == []
    owner = a.keeper.owners()
    assert all(owner[s] == ("a" if s in want["a"] else "b") for s in range(SHARDS))


def test_a_renewal_counts_from_when_it_was_sent_however_long_it_took(
        store: FakeStore) -> None:
    a = Node(store, "a")
    a.keeper.tick()  # takes every shard
    store.renew_takes = 3.0
    sent = store.clock.now
    a.keeper.tick()
    assert a.shards() == set(range(SHARDS))
    store.clock.now = sent + DEADLINE - 0.01
    assert a.keeper.epoch(5) is not None
    store.clock.now = sent + DEADLINE  # PostgreSQL renewed at sent + 3: not counted
    assert a.keeper.epoch(5) is None and a.keeper.held() == {}


def test_a_renewal_slower_than_the_deadline_loses_the_shards(store: FakeStore) -> None:
    a = Node(store, "a")
    a.keeper.tick()
    store.renew_takes = DEADLINE + 1
    a.keeper.tick()
    assert sorted(a.lost) == list(range(SHARDS)) and a.shards() == set()


def test_while_the_store_is_down_shards_last_to_their_deadline_then_are_lost(
        store: FakeStore, caplog: pytest.LogCaptureFixture) -> None:
    a = Node(store, "a")
    a.keeper.tick()
    last_sent = store.clock.now
    store.down = True
    with caplog.at_level(logging.INFO, logger="wkhost"):
        for _ in range(3):  # 3 failed rounds: 6 s, short of the deadline
            store.clock.now += RENEW
            a.keeper.tick()
            assert a.lost == [] and a.keeper.epoch(0) is not None
        store.clock.now = last_sent + DEADLINE
        assert a.keeper.epoch(0) is None  # at once, before the keeper's next round
        a.keeper.tick()
        assert sorted(a.lost) == list(range(SHARDS))
        store.down = False
        a.keeper.tick()
    unreachable = [r for r in caplog.records if "cannot be reached" in r.getMessage()]
    assert len(unreachable) == 1
    assert [r for r in caplog.records if "answers again" in r.getMessage()]
    # Back: the leases are still this node's in the store, and are taken at new epochs.
    assert a.shards() == set(range(SHARDS))
    assert all(epoch == 2 for _, epoch in a.gained[SHARDS:])


def test_a_shard_taken_by_another_node_is_lost_at_the_next_round(store: FakeStore) -> None:
    a = Node(store, "a")
    a.keeper.tick()
    _, epoch, expires = store.leases[9]
    store.leases[9] = ("b", epoch + 1, expires)  # as after a's lease lapsed
    a.keeper.tick()
    assert a.lost == [9] and a.keeper.epoch(9) is None
    assert a.keeper.owners()[9] == "b"


def test_a_live_node_that_does_not_take_its_shards_loses_them_after_two_ttls(
        store: FakeStore) -> None:
    a = Node(store, "a")
    store.join("b", "b:80", {"c": "00"})  # heartbeats, never takes
    want = split(["a", "b"])
    waited = 0.0
    while a.shards() != set(range(SHARDS)):
        assert waited <= FALLBACK_TTLS * TTL + 2 * RENEW
        store.heartbeat("b")
        a.keeper.tick()
        if waited < FALLBACK_TTLS * TTL:
            assert a.shards() == want["a"]
        store.clock.now += RENEW
        waited += RENEW
    rounds(store, [a], 5)  # and not given back to it, to lapse again
    assert a.shards() == set(range(SHARDS)) and a.lost == []


def test_shards_go_back_to_a_returning_node_a_few_a_round(store: FakeStore) -> None:
    a = Node(store, "a")
    a.keeper.tick()
    b = Node(store, "b")
    want = split(["a", "b"])
    for _ in range(SHARDS):
        before = a.shards()
        rounds(store, [a, b], 1)
        assert len(before - a.shards()) <= HANDOVER_PER_ROUND
        if b.shards() == want["b"]:
            break
    assert a.shards() == want["a"] and b.shards() == want["b"]
    assert sorted(a.lost) == sorted(want["b"])
    assert store.held_by("b") == want["b"]


def test_a_failing_callback_is_logged_and_the_shard_not_held(
        store: FakeStore, caplog: pytest.LogCaptureFixture) -> None:
    def refuse(shard: int, epoch: int) -> None:
        if shard == 3:
            raise RuntimeError("alarms could not be read")

    keeper = LeaseKeeper(store, "a", "a:80", {}, TTL, RENEW, DEADLINE,
                         on_gained=refuse, on_lost=_boom, clock=store.clock)
    keeper.join()
    with caplog.at_level(logging.ERROR, logger="wkhost"):
        keeper.tick()
        assert keeper.epoch(3) is None and keeper.epoch(4) is not None
        assert store.leases[3][2] == -math.inf  # released, for another round
        keeper.stop()  # on_lost raises for every shard: each is logged, all released
    assert "alarms could not be read" in caplog.text and "lost" in caplog.text
    assert store.held_by("a") == set()


def _boom(shard: int) -> None:
    raise RuntimeError("lost")


@pytest.mark.parametrize("release", [True, False])
def test_stop_lets_go_of_every_shard_and_releases_them_if_asked(
        store: FakeStore, release: bool) -> None:
    a = Node(store, "a")
    a.keeper.tick()
    a.keeper.stop(release=release)
    assert sorted(a.lost) == list(range(SHARDS)) and a.keeper.held() == {}
    assert store.held_by("a") == (set() if release else set(range(SHARDS)))
    assert ("a" in store.live_nodes(TTL)) == (not release)


def test_a_clean_stop_hands_the_shards_over_at_the_others_next_round(
        store: FakeStore) -> None:
    a, b = Node(store, "a"), Node(store, "b")
    rounds(store, [a, b], 2)
    a.keeper.stop()
    b.keeper.tick()
    assert b.shards() == set(range(SHARDS))


def test_placement_says_where_from_the_keeper(store: FakeStore) -> None:
    """The placement port's answer (host/placement.py): here, or the holding node with
    its address and its lease's epoch, or nobody yet once no lease is valid (this
    node's own past its deadline included)."""
    a, b = Node(store, "a"), Node(store, "b")
    rounds(store, [a, b], 2)
    place = ClusterPlacement(a.keeper, "a")
    ids = [f"id-{i}" for i in range(200)]
    mine = [i for i in ids if shard_of(i) in a.shards()]
    assert mine and len(mine) < len(ids)
    for i in ids:
        where = place.where(i)
        assert where.here == (i in mine)
        if not where.here:
            assert (where.process, where.node, where.address, where.epoch) == (
                None, "b", "b:80", b.keeper.epoch(shard_of(i)))
    assert place.address_of("b") == "b:80" and place.address_of("zz") is None
    store.clock.now += DEADLINE  # no round: a's deadline passes
    assert not any(place.where(i).here for i in ids)
    store.clock.now += 10 * DEADLINE  # no round: every lease expires
    assert all(place.where(i) == NOBODY_YET for i in ids)


def test_the_thread_runs_rounds_until_stopped(store: FakeStore) -> None:
    keeper = LeaseKeeper(store, "a", "a:80", {}, 1.0, 0.05, 0.5, on_gained=_none,
                         on_lost=_none, clock=time.monotonic)
    keeper.start()
    try:
        _wait_for(lambda: len(keeper.held()) == SHARDS)
    finally:
        keeper.stop()
    assert keeper.held() == {} and store.held_by("a") == set()


def _none(*args: int) -> None:
    pass


def _wait_for(ok: Callable[[], bool], limit_s: float = 10.0) -> None:
    end = time.monotonic() + limit_s
    while not ok():
        assert time.monotonic() < end, "not reached in time"
        time.sleep(0.01)


class HangingStore(FakeStore):
    """A store whose renewals stop answering once `hang` is set, as a hung server's."""

    def __init__(self, clock: Clock) -> None:
        super().__init__(clock)
        self.hang, self.free = threading.Event(), threading.Event()

    def renew(self, node_id: str, held: dict[int, int], ttl_s: float) -> set[int]:
        if self.hang.is_set():
            self.free.wait()
        return super().renew(node_id, held, ttl_s)


def test_stop_does_not_wait_for_a_round_stuck_on_the_store() -> None:
    store = HangingStore(Clock())
    lost: list[int] = []
    keeper = LeaseKeeper(store, "a", "a:80", {}, 0.5, 0.05, 0.3, on_gained=_none,
                         on_lost=lost.append, clock=time.monotonic)
    keeper.start()
    try:
        _wait_for(lambda: len(keeper.held()) == SHARDS)
        store.hang.set()
        _wait_for(lambda: keeper.held() == {})  # the deadline, with no round to see it
        keeper.stop()
        assert sorted(lost) == list(range(SHARDS))
        assert store.held_by("a") == set(range(SHARDS))  # not released: left to expire
    finally:
        store.free.set()


def test_the_view_names_no_one_past_a_lease_s_expiry_however_late_its_rounds(
        store: FakeStore) -> None:
    a, b = Node(store, "a"), Node(store, "b")
    rounds(store, [a, b], 2)
    a.keeper.tick()  # its view read after b's last renewal
    shard = next(iter(b.shards()))
    epoch = b.keeper.epoch(shard)
    place = ClusterPlacement(a.keeper, "a")
    actor = next(f"x{k}" for k in range(10_000) if shard_of(f"x{k}") == shard)
    assert (place.where(actor).node, place.where(actor).epoch) == ("b", epoch)
    expires = store.leases[shard][2]  # b stops here (paused): no renewal, no round
    store.clock.now = expires - 0.01
    assert place.where(actor).node == "b"
    store.clock.now = expires  # a's own rounds are late too: its view is a round old
    assert place.where(actor) == NOBODY_YET
    store.clock.now += TTL  # b is no longer live: a takes the shard at a new epoch
    a.keeper.tick()
    assert place.where(actor).here and a.keeper.epoch(shard) == epoch + 1
