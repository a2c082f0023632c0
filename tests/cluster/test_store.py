"""The cluster's store (host/cluster/store.py) against a real PostgreSQL (a fresh
database per test): the schema's versions, joining, leases, the fence on every write,
the race of a takeover with an append in flight, group commit, snapshots that fold the
log, and the checks of a load. Outcomes only: waits poll for a condition, with a bound."""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest
from wkhost.cluster import schema
from wkhost.cluster.connections import StoreUnavailable
from wkhost.cluster.loaded import CorruptStore, Loaded
from wkhost.cluster.statements import APPEND, SNAPSHOT
from wkhost.cluster.store import AppendRow, ClusterStore, append_params
from wkhost.errors import ClusterRefused
from wkhost.testing.pg_machine import free_port
from wkhost.testing.postgres import PgServer

pytestmark = pytest.mark.timeout(120)

A, B = "a" * 64, "b" * 64
ACTOR, SHARD = "orders/o1", 7


@pytest.fixture
def store(pg_url: str) -> Iterator[ClusterStore]:
    s = ClusterStore(pg_url)
    s.connect_check()
    try:
        yield s
    finally:
        s.close()


@pytest.fixture
def sql(pg_url: str) -> Iterator[Callable[..., list[tuple[Any, ...]]]]:
    """Run a statement on a connection of the test's own; its rows (if any)."""
    with psycopg.connect(pg_url, autocommit=True) as conn:
        def run(text: str, params: Any = ()) -> list[tuple[Any, ...]]:
            cur = conn.execute(text, params)
            return cur.fetchall() if cur.description else []
        yield run


def wait_until(cond: Callable[[], object], what: str, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not cond():
        assert time.monotonic() < deadline, f"still not {what} after {timeout_s} s"
        time.sleep(0.05)


def row(seq: int, epoch: int, node: str = "n1", cs: bytes | None = None,
        actor: str = ACTOR, shard: int = SHARD, alarm: int | None = None) -> AppendRow:
    cls, _, actor_id = actor.partition("/")
    return AppendRow(actor, shard, epoch, node, seq, cs or f"cs{seq}".encode(), alarm,
                     None, cls, actor_id)


def snap(store: ClusterStore, seq: int, epoch: int, node: str = "n1",
         db: bytes = b"image") -> bool:
    return store.snapshot(ACTOR, SHARD, epoch, node, seq, db, None, '{"s": 1}', "orders", "o1")


def expire(sql: Callable[..., Any], shard: int = SHARD) -> None:
    """The lease lapses now (as a TTL running out would, without the wait)."""
    sql("UPDATE leases SET expires_at = clock_timestamp() - interval '1 s' WHERE shard = %s",
        [shard])


# -- schema ---------------------------------------------------------------------------

def test_migrating_twice_is_a_no_op(store: ClusterStore, pg_url: str,
                                    sql: Callable[..., Any]) -> None:
    store.connect_check()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        assert schema.migrate(conn) == schema.LATEST
    assert sql("SELECT version FROM wk_schema") == [(schema.LATEST,)]
    assert sql("SELECT count(*), min(shard), max(shard), max(epoch) FROM leases") == [
        (256, 0, 255, 0)]


def test_a_store_of_a_newer_schema_is_refused(store: ClusterStore,
                                             sql: Callable[..., Any]) -> None:
    sql("INSERT INTO wk_schema VALUES (%s)", [schema.LATEST + 1])
    with pytest.raises(ClusterRefused, match=f"version {schema.LATEST + 1}, newer"):
        store.connect_check()


def test_an_unreachable_store_is_unavailable_with_its_address() -> None:
    port = free_port()
    s = ClusterStore(f"postgresql://wkpg@127.0.0.1:{port}/postgres")
    with pytest.raises(StoreUnavailable, match=f"127.0.0.1:{port}"):
        s.connect_check()


# -- nodes ----------------------------------------------------------------------------

def test_join_refuses_classes_built_otherwise(store: ClusterStore) -> None:
    store.join("n1", "h1:1", {"orders": A, "app": B})
    store.join("n2", "h2:1", {"orders": A, "app": B})  # the same: joins
    with pytest.raises(ClusterRefused) as e:
        store.join("n3", "h3:1", {"orders": B, "app": B})
    assert "orders" in str(e.value) and A[:12] in str(e.value) and B[:12] in str(e.value)
    assert set(store.live_nodes(60)) == {"n1", "n2"}  # the refused node is not recorded


@pytest.mark.parametrize("classes, named", [({"orders": A}, "lacks app"),
                                            ({"orders": A, "app": B, "x": A}, "no x")])
def test_join_refuses_other_classes(store: ClusterStore, classes: dict[str, str],
                                    named: str) -> None:
    store.join("n1", "h1:1", {"orders": A, "app": B})
    with pytest.raises(ClusterRefused, match=named):
        store.join("n2", "h2:1", classes)


def test_live_nodes_are_those_with_a_recent_heartbeat(store: ClusterStore,
                                                      sql: Callable[..., Any]) -> None:
    store.join("n1", "h1:1", {})
    store.join("n2", "h2:1", {})
    sql("UPDATE nodes SET heartbeat_at = clock_timestamp() - interval '1 hour'"
        " WHERE node_id = 'n2'")
    assert store.live_nodes(60) == {"n1": "h1:1"}
    store.heartbeat("n2")
    assert store.live_nodes(60) == {"n1": "h1:1", "n2": "h2:1"}


# -- leases ---------------------------------------------------------------------------

def test_a_lease_is_taken_once_renewed_by_its_owner_and_lapses(store: ClusterStore) -> None:
    assert SHARD in store.expired_shards()
    assert store.acquire(SHARD, "n1", 60) == 1
    assert store.acquire(SHARD, "n2", 60) is None  # valid, and another's
    assert store.owners()[SHARD] == ("n1", 1, True)
    assert SHARD not in store.expired_shards()
    assert store.renew("n1", {SHARD: 1, 8: 0}, 0.3) == {SHARD}  # shard 8 is not n1's
    wait_until(lambda: not store.owners()[SHARD][2], "expired")
    assert store.acquire(SHARD, "n2", 60) == 2
    assert store.renew("n1", {SHARD: 1}, 60) == set()  # taken: not n1's to renew
    assert store.acquire(SHARD, "n2", 60) == 3  # its own, again: a new epoch
    assert store.owners()[SHARD] == ("n2", 3, True)


def test_a_released_lease_is_free_at_once_but_only_the_owners_release_counts(
        store: ClusterStore) -> None:
    assert store.acquire(SHARD, "n1", 60) == 1
    store.release("n2", {SHARD: 1})  # not n2's
    store.release("n1", {SHARD: 0})  # an old epoch
    assert store.owners()[SHARD] == ("n1", 1, True)
    store.release("n1", {SHARD: 1})
    assert store.owners()[SHARD] == ("n1", 1, False)
    assert store.acquire(SHARD, "n2", 60) == 2


# -- the fence --------------------------------------------------------------------------

def test_after_a_takeover_the_old_epochs_writes_are_refused_and_nothing_is_written(
        store: ClusterStore, sql: Callable[..., Any]) -> None:
    e1 = store.acquire(SHARD, "n1", 60)
    assert e1 is not None and snap(store, 1, e1)
    assert store.append_many([row(2, e1)]) == [True]
    expire(sql)
    e2 = store.acquire(SHARD, "n2", 60)
    assert e2 == e1 + 1
    before = sql("SELECT * FROM changelog"), sql("SELECT * FROM snapshots"), sql(
        "SELECT * FROM actors")
    assert store.append(ACTOR, SHARD, e1, "n1", 3, b"late", 5, None, "orders", "o1") is False
    assert not snap(store, 3, e1)
    assert store.delete_actor(ACTOR, SHARD, e1, "n1") is False
    assert store.renew("n1", {SHARD: e1}, 60) == set()
    assert store.append(ACTOR, SHARD, e1, "n2", 3, b"x", None, None, "orders", "o1") is False
    after = sql("SELECT * FROM changelog"), sql("SELECT * FROM snapshots"), sql(
        "SELECT * FROM actors")
    assert after == before
    assert store.append(ACTOR, SHARD, e2, "n2", 3, b"new", None, None, "orders", "o1")
    assert store.load(ACTOR) == Loaded(1, b"image", [(2, b"cs2"), (3, b"new")], 3)


def _append_2(conn: psycopg.Connection[Any], epoch: int) -> list[tuple[Any, ...]]:
    return conn.execute(APPEND, append_params([row(2, epoch)])).fetchall()


def _snapshot_2(conn: psycopg.Connection[Any], epoch: int) -> list[tuple[Any, ...]]:
    params = {"actor": ACTOR, "shard": SHARD, "epoch": epoch, "node": "n1", "seq": 2,
              "db": b"v2", "sha256": hashlib.sha256(b"v2").digest(), "alarm": None,
              "attrs": None, "cls": "orders", "id": "o1"}
    return conn.execute(SNAPSHOT, params).fetchall()


@pytest.mark.parametrize("write, written, seen", [
    (_append_2, [(ACTOR, 2)], Loaded(1, b"image", [(2, b"cs2")], 2)),
    (_snapshot_2, [(1,)], Loaded(2, b"v2", [], 2))])
def test_a_takeover_waits_for_a_write_in_flight_and_sees_it(
        store: ClusterStore, pg_url: str, sql: Callable[..., Any],
        write: Callable[[psycopg.Connection[Any], int], list[tuple[Any, ...]]],
        written: list[tuple[Any, ...]], seen: Loaded) -> None:
    e1 = store.acquire(SHARD, "n1", 60)
    assert e1 is not None and snap(store, 1, e1)
    taken: list[int | None] = []
    expire(sql)  # the holder's lease lapses while its write is on its way
    with psycopg.connect(pg_url, autocommit=True) as holder:
        with holder.transaction():  # the holder's write, its COMMIT held back
            assert write(holder, e1) == written
            taker = threading.Thread(
                target=lambda: taken.append(store.acquire(SHARD, "n2", 60)))
            taker.start()
            wait_until(lambda: sql("SELECT count(*) FROM pg_stat_activity WHERE"
                                   " datname = current_database() AND wait_event_type"
                                   " = 'Lock'") == [(1,)], "blocked on the write")
            assert not taken
        taker.join(30)
    assert taken == [e1 + 1]
    assert store.load(ACTOR) == seen  # the taker sees it
    assert store.append_many([row(3, e1)]) == [False]
    assert not snap(store, 3, e1)


def test_a_batch_is_fenced_row_by_row(store: ClusterStore, sql: Callable[..., Any]) -> None:
    mine = store.acquire(SHARD, "n1", 60)
    other = store.acquire(9, "n2", 60)
    assert mine is not None and other is not None
    rows = [row(1, mine), row(2, mine, alarm=50),  # two of one actor: its row says seq 2
            row(1, other, actor="orders/o2", shard=9),  # shard 9 is n2's
            row(1, mine + 1, actor="orders/o3"),  # a later epoch than held
            row(1, mine, actor="app/a1", alarm=70),
            row(2, mine)]  # seq 2 again in the same batch
    assert store.append_many(rows) == [True, True, False, False, True, False]
    assert sql("SELECT actor, seq, epoch, sha256 FROM changelog ORDER BY actor, seq") == [
        ("app/a1", 1, mine, hashlib.sha256(b"cs1").digest()),
        (ACTOR, 1, mine, hashlib.sha256(b"cs1").digest()),
        (ACTOR, 2, mine, hashlib.sha256(b"cs2").digest())]
    assert sql("SELECT actor, cls, id, shard, seq, alarm_at_ms FROM actors ORDER BY actor") == [
        ("app/a1", "app", "a1", SHARD, 1, 70), (ACTOR, "orders", "o1", SHARD, 2, 50)]
    assert store.alarms_in([SHARD, 9]) == [("app/a1", 70), (ACTOR, 50)]
    # A batch tried again after its answer was lost: the same rows, there already at the
    # same epoch, count as written; another changeset at a seq that is taken does not.
    assert store.append_many(rows[:2]) == [True, True]
    assert store.append_many([row(1, mine, cs=b"other")]) == [False]
    assert store.append_many([]) == []


# -- snapshots and loads ----------------------------------------------------------------

def test_a_snapshot_folds_the_log_and_a_load_is_it_and_its_tail(
        store: ClusterStore, sql: Callable[..., Any]) -> None:
    e = store.acquire(SHARD, "n1", 60)
    assert e is not None
    assert store.load(ACTOR) is None
    assert snap(store, 1, e, db=b"v1")
    assert store.append_many([row(s, e) for s in (2, 3, 4, 5)]) == [True] * 4
    assert store.load(ACTOR) == Loaded(1, b"v1", [(s, f"cs{s}".encode()) for s in
                                                  (2, 3, 4, 5)], 5)
    assert snap(store, 6, e, db=b"v6")
    assert sql("SELECT count(*) FROM changelog") == [(0,)]
    assert not snap(store, 4, e, db=b"old")  # not newer: nothing changes
    assert store.append_many([row(7, e), row(8, e)]) == [True, True]
    assert store.load(ACTOR) == Loaded(6, b"v6", [(7, b"cs7"), (8, b"cs8")], 8)
    assert sql("SELECT seq, attrs FROM actors") == [(8, None)]
    assert store.listed("orders") == [("o1", None)]


def test_a_fenced_delete_removes_every_row_of_the_actor(store: ClusterStore,
                                                      sql: Callable[..., Any]) -> None:
    e = store.acquire(SHARD, "n1", 60)
    assert e is not None and snap(store, 1, e) and store.append_many([row(2, e)]) == [True]
    assert store.delete_actor(ACTOR, SHARD, e, "n1")
    assert store.load(ACTOR) is None
    assert sql("SELECT (SELECT count(*) FROM changelog) + (SELECT count(*) FROM snapshots)"
               " + (SELECT count(*) FROM actors)") == [(0,)]


@pytest.mark.parametrize("damage, said", [
    ("UPDATE changelog SET cs = 'x' WHERE seq = 3", "changeset at seq 3 fails its sha256"),
    ("UPDATE snapshots SET db = 'x'", "snapshot at seq 1 fails its sha256"),
    ("DELETE FROM changelog WHERE seq = 3", "gap"),
    ("DELETE FROM changelog WHERE seq = 4", "gap"),  # the tail: the actor's row says 4
    ("DELETE FROM snapshots", "gap"),
])
def test_a_load_checks_every_blob_and_the_sequence(store: ClusterStore,
                                                   sql: Callable[..., Any], damage: str,
                                                   said: str) -> None:
    e = store.acquire(SHARD, "n1", 60)
    assert e is not None and snap(store, 1, e)
    assert store.append_many([row(s, e) for s in (2, 3, 4)]) == [True] * 3
    sql(damage)
    with pytest.raises(CorruptStore, match=said) as raised:
        store.load(ACTOR)
    assert ACTOR in str(raised.value)


def test_listing_is_by_id_bytewise(store: ClusterStore) -> None:
    e = store.acquire(SHARD, "n1", 60)
    assert e is not None
    for actor_id in ("b", "Z", "a", "B"):
        store.append(f"orders/{actor_id}", SHARD, e, "n1", 1, b"c", None, f'"{actor_id}"',
                     "orders", actor_id)
    store.append("app/x", SHARD, e, "n1", 1, b"c", None, None, "app", "x")
    assert store.list_actors("orders", "", 10) == ["B", "Z", "a", "b"]
    assert store.list_actors("orders", "Z", 2) == ["a", "b"]
    assert store.listed("orders") == [(i, f'"{i}"') for i in ("B", "Z", "a", "b")]


# -- the connection ---------------------------------------------------------------------

def test_a_restarted_server_is_reached_again(pg_server: PgServer, pg_url: str) -> None:
    s = ClusterStore(pg_url)
    try:
        s.connect_check()
        e = s.acquire(SHARD, "n1", 60)
        assert e is not None
        pg_server.restart()  # every connection is closed under the store
        assert s.owners()[SHARD] == ("n1", e, True)  # a read: tried again, at once
        with pytest.raises(StoreUnavailable):
            pg_server.kill()
            s.append(ACTOR, SHARD, e, "n1", 1, b"c", None, None, "orders", "o1")
        pg_server.restart()
        assert s.append(ACTOR, SHARD, e, "n1", 1, b"c", None, None, "orders", "o1")
    finally:
        s.close()
