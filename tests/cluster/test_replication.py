"""An actor's working copy in cluster mode (host/replication/) against a real
PostgreSQL: what its event is answered when the shard is let go of (a routine hand-over)
after its last durable write, and that a lease lost under a host function is reported
once, by the event it fails."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from wkhost.cluster.store import ClusterStore
from wkhost.errors import LeaseLost
from wkhost.events.actor_slot import ActorSlot
from wkhost.interfaces.linker import guard
from wkhost.partition import shard_of
from wkhost.replication.copy import actor_key
from wkhost.replication.restore import Replication
from wkhost.storage.actordb import ActorDb
from wkhost.traps import TrapKind, take_host_failure
from wkhost.types import ActorRef

pytestmark = pytest.mark.timeout(120)

REF = ActorRef("probe", "handed-1")


class Keeper:
    """The lease keeper as a copy reads it: the epoch this node holds the shard at, or
    None once it let go of it."""

    def __init__(self, epoch: int) -> None:
        self.now: int | None = epoch

    def epoch(self, shard: int) -> int | None:
        return self.now


@pytest.fixture
def served(pg_url: str, tmp_path: Path) -> Iterator[tuple[ActorDb, Keeper, ClusterStore]]:
    """The actor's database, opened as a node that holds its shard opens it."""
    store = ClusterStore(pg_url)
    store.connect_check()
    store.join("n1", "127.0.0.1:1", {})
    epoch = store.acquire(shard_of(REF.id), "n1", 600)
    assert epoch is not None
    keeper = Keeper(epoch)
    rep = Replication(store, keeper, "n1", 200, 4 << 20, wait_s=30)  # type: ignore[arg-type]
    rep.start()
    slot = ActorSlot(REF, tmp_path / "handed-1.db")
    rep.prepare(slot.ref, slot.path, slot.close)
    db = ActorDb(slot.path, 1 << 14, working_copy=rep.copy_of(REF))
    try:
        db.guest_exec("CREATE TABLE w(v TEXT PRIMARY KEY)", [], True)
        yield db, keeper, store
    finally:
        db.close()
        rep.close()
        store.close()


def _kept(store: ClusterStore) -> int:
    loaded = store.load(actor_key(REF))
    assert loaded is not None
    return loaded.last_seq


def test_a_write_committed_before_a_hand_over_is_answered_as_committed(
        served: tuple[ActorDb, Keeper, ClusterStore]) -> None:
    db, keeper, store = served
    db.guest_exec("INSERT INTO w VALUES ('kept')", [], True)  # committed in PostgreSQL
    seq = _kept(store)
    keeper.now = None  # the shard handed over before the event's end
    assert db.working_copy is not None
    db.working_copy.lazy(db)  # the event's end (events/settle.py): nothing new to send
    db.sync_if_pending()
    assert db.working_copy is not None and db.working_copy.lost is None
    assert _kept(store) == seq


def test_a_write_after_a_hand_over_is_refused_as_lease_lost(
        served: tuple[ActorDb, Keeper, ClusterStore]) -> None:
    db, keeper, store = served
    seq = _kept(store)
    keeper.now = None
    with pytest.raises(LeaseLost, match="no longer served by this node"):
        db.guest_exec("INSERT INTO w VALUES ('late')", [], True)
    assert db.working_copy is not None and db.working_copy.lost is not None
    assert _kept(store) == seq


def test_a_lease_lost_under_a_host_function_traps_without_a_line_of_its_own(
        caplog: pytest.LogCaptureFixture) -> None:
    """The refused write is reported once, by the event it fails (its trap's line, and
    the LeaseLost its caller hears): the linker traps without logging it. A host
    function's other failures are logged there, with their traceback."""
    def _exec_durable(_store: object) -> None:
        raise LeaseLost("probe/x is no longer served by this node (its shard's lease was "
                        "lost); retry")

    def _exec(_store: object) -> None:
        raise RuntimeError("a bug")

    take_host_failure()  # whatever an earlier test left on this thread
    with caplog.at_level(logging.INFO, logger="wkhost.linker"):
        marks = []
        for fn in (_exec_durable, _exec):
            with pytest.raises(Exception, match="host function failed"):
                guard(fn, "sqlite")(None)
            marks.append(take_host_failure())  # none left for a later test's trap
    assert marks == [TrapKind.LEASE_LOST, TrapKind.HOST]
    (bug,) = caplog.records
    assert bug.getMessage() == "host function _exec failed"
    assert bug.levelno == logging.ERROR and bug.exc_info is not None
