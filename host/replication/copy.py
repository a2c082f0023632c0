"""Cluster mode: one actor's working copy (`Copy`), its writes to PostgreSQL fenced by
its shard's lease (docs/cluster.md). Its SQLite file here is a working copy, trusted
only under the epoch it was restored or made at (restore.py).

- At a durable point (ActorDb.sync_if_pending), the changes since the last write go as
  one changeset, fenced by the epoch, and the event waits for PostgreSQL's commit
  (`Copy.durable`). At an event's end, what `exec` committed goes the same way without
  waiting (`Copy.lazy`), in the writer's next batch (cluster/writer.py).
- An actor's first write, and any after DDL, is a snapshot; so is the write after
  --snapshot-every changesets or --snapshot-mb of them, which folds the log.
- A write that the store refuses (another node holds the shard now) breaks the copy:
  the event fails with LeaseLost, nothing of it is acknowledged, and the next event
  here, if the shard comes back, restores the actor again.
"""

from __future__ import annotations

from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import Protocol

from ..cluster.store import AppendRow
from ..cluster.writer import DeleteWrite, SnapshotWrite, Writer
from ..errors import DeadlineExceeded, HostError, LeaseLost, PeerUnavailable
from ..storage import changes, host_rows
from ..storage.actordb import ActorDb
from ..types import ActorRef


def actor_key(ref: ActorRef) -> str:
    """An actor's name in the store: class names hold no '/'."""
    return f"{ref.cls}/{ref.id}"


def ref_of(key: str) -> ActorRef:
    cls, _, actor_id = key.partition("/")
    return ActorRef(cls, actor_id)


class Epochs(Protocol):
    """The lease keeper, as a copy reads it (cluster/leases.py's LeaseKeeper)."""

    def epoch(self, shard: int) -> int | None: ...


class Node(Protocol):
    """What every copy of this node writes through and under (restore.py's Replication)."""

    @property
    def keeper(self) -> Epochs: ...

    @property
    def node_id(self) -> str: ...

    @property
    def snapshot_every(self) -> int: ...

    @property
    def snapshot_bytes(self) -> int: ...

    @property
    def writer(self) -> Writer: ...

    def wait_s(self) -> float: ...


@dataclass
class Copy:
    """One actor's working copy here: the epoch it is trusted under, its last sequence
    number in the store, and the log since its snapshot. Used by the actor's event."""

    ref: ActorRef
    shard: int
    epoch: int
    seq: int
    replication: Node
    new: bool = False
    logged: int = 0  # changesets since the snapshot
    logged_bytes: int = 0
    lost: HostError | None = None
    last: Future[bool] | None = field(default=None, repr=False)  # the latest write sent

    def durable(self, db: ActorDb) -> None:
        self._send(db)
        self._wait(self.last)

    def lazy(self, db: ActorDb) -> None:
        """At the event's end (events/settle.py): what it committed without asking for
        durability goes to the store soon, unless a transaction is still open."""
        # A new actor that has written no row keeps nothing (events/eviction.py): it goes
        # to the store with its first row or its first durable write, if ever.
        if self.lost is None and not db.conn.in_transaction \
                and not (self.new and not db.wrote_rows):
            self._send(db)

    def deleted(self) -> None:
        """After what was sent before, the actor's rows go from the store (fenced)."""
        rep = self.replication
        if self.lost is not None:
            raise self.lost
        if self.seq:  # it has rows there
            self.last = rep.writer.submit(DeleteWrite(actor_key(self.ref), self.shard,
                                                      self.epoch, rep.node_id))
            self._wait(self.last)
        self.new, self.seq, self.logged, self.logged_bytes = True, 0, 0, 0

    def _send(self, db: ActorDb) -> None:
        rep = self.replication
        if self.lost is not None:
            raise self.lost
        assert db.capture is not None
        alarm = host_rows.alarm_at(db)  # read first: nothing is taken if these fail
        attrs = db.published()
        cs = db.capture.take()
        # DDL (and VACUUM) move the schema's version: changesets carry none of it.
        moved = db.capture.schema_moved or db.schema_changed
        fold = (self.logged >= rep.snapshot_every or self.logged_bytes >= rep.snapshot_bytes)
        if not (cs or self.new or moved):
            # Nothing new: a durable point waits on what was sent before, whose fence
            # decides, even if the shard was let go of since (a routine hand-over after
            # the event's last write): that write committed is answered as committed.
            return
        if rep.keeper.epoch(self.shard) != self.epoch:
            self._break("its shard's lease was lost")
        try:
            write = self._write(db, cs, moved or fold, alarm, attrs)
        except BaseException:
            self._refused()  # what was taken is gone: the copy is not trusted again
            raise
        self.last = rep.writer.submit(write)
        self.last.add_done_callback(self._written)

    def _write(self, db: ActorDb, cs: bytes | None, whole: bool, alarm: int | None,
               attrs: str | None) -> AppendRow | SnapshotWrite:
        """The next write: the whole database (the first, after DDL, or to fold the
        log), else the changeset."""
        rep, key, ref = self.replication, actor_key(self.ref), self.ref
        seq = self.seq + 1
        if self.new or whole or cs is None:
            image = changes.snapshot_image(db.conn)
            self.seq, self.new, db.schema_changed = seq, False, False
            self.logged, self.logged_bytes = 0, 0
            return SnapshotWrite(key, self.shard, self.epoch, rep.node_id, seq, image, alarm,
                                 attrs, ref.cls, ref.id)
        self.seq, self.logged, self.logged_bytes = seq, self.logged + 1, \
            self.logged_bytes + len(cs)
        return AppendRow(actor=key, shard=self.shard, epoch=self.epoch, node_id=rep.node_id,
                         seq=seq, cs=cs, alarm_at_ms=alarm, attrs=attrs, cls=ref.cls,
                         id=ref.id)

    def _written(self, done: Future[bool]) -> None:
        if done.exception() is not None or not done.result():
            self._refused()

    def _refused(self) -> None:
        self.lost = self.lost or LeaseLost(
            f"{self.ref}'s write was refused by the store: another node holds its shard "
            "now; retry, and it is served there")

    def _wait(self, done: Future[bool] | None) -> None:
        """Wait for the write (and so every earlier one of the actor) to be committed.
        Its result is read here, not left to `_written`: a future wakes its waiters
        before it runs its callbacks."""
        if done is None:
            return
        try:
            ok = done.result(timeout=self.replication.wait_s())
        except FutureTimeout:
            # It may commit yet: the copy is restored (once it has) before its next use.
            self.lost = self.lost or DeadlineExceeded(
                f"{self.ref}'s durable write did not reach the cluster's store in time "
                "(is PostgreSQL up?); it may have been kept")
            raise self.lost from None
        except Exception:  # noqa: BLE001 - the store failed it: not acknowledged
            ok = False
        if not ok:
            self._refused()
        if self.lost is not None:
            raise self.lost

    def settled(self, timeout_s: float = 10.0) -> None:
        """Wait for the copy's last write to be committed or refused."""
        if self.last is not None and not self.last.done():
            try:
                self.last.exception(timeout=timeout_s)
            except FutureTimeout:
                raise PeerUnavailable(f"{self.ref}'s writes are still on their way to the "
                                      "cluster's store; retry shortly") from None

    def _break(self, why: str) -> None:
        self.lost = LeaseLost(f"{self.ref} is no longer served by this node ({why}); retry")
        raise self.lost
