"""Cluster mode: this node's working copies (`Replication`), each restored from the store
under the epoch at which its shard is held now (docs/cluster.md).

A working copy is trusted only if this process restored or made it under the epoch at
which its shard is held now. `prepare` checks that before an event opens the database,
and restores the actor from the store if not: its snapshot, then its changesets
(storage/apply_changes.py checks each against the state it was recorded on). A copy whose
write was refused (copy.py), or whose shard went, is restored again before its next use.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..cluster.connections import StoreUnavailable
from ..cluster.leases import LeaseKeeper
from ..cluster.loaded import CorruptStore
from ..cluster.store import ClusterStore
from ..cluster.writer import Writer
from ..errors import NotOwnerNow, PeerUnavailable, StorageFailed
from ..partition import shard_of
from ..storage import apply_changes
from ..storage.files import delete_db_files
from ..types import ActorRef
from .copy import Copy, actor_key

log = logging.getLogger("wkhost")


class Replication:
    """This node's working copies, and the writer their writes go through."""

    def __init__(self, store: ClusterStore, keeper: LeaseKeeper, node_id: str,
                 snapshot_every: int, snapshot_bytes: int, wait_s: float = 30.0) -> None:
        self.store = store
        self.keeper = keeper
        self.node_id = node_id
        self.snapshot_every = snapshot_every
        self.snapshot_bytes = snapshot_bytes
        self._wait_s = wait_s
        self.writer = Writer(store)
        self._copies: dict[ActorRef, Copy] = {}
        self._lock = threading.Lock()

    def wait_s(self) -> float:
        return self._wait_s

    def start(self) -> None:
        self.writer.start()

    def close(self) -> None:
        self.writer.stop()

    def copy_of(self, ref: ActorRef) -> Copy | None:
        return self._copies.get(ref)

    def prepare(self, ref: ActorRef, path: Path, close: Callable[[], Any]) -> None:
        """Before an event opens the actor's database (at `path`): a working copy of this
        epoch's, restored from the store if this process has none (`close` lets go of a
        stale one's instance and database first, if they are open). Raises LeaseLost if
        this node does not hold the actor's shard now."""
        shard = shard_of(ref.id)
        epoch = self.keeper.epoch(shard)
        if epoch is None:
            raise NotOwnerNow(f"{ref} is not served by this node now (shard {shard}); retry")
        copy = self._copies.get(ref)
        if copy is not None and copy.epoch == epoch and copy.lost is None:
            return
        if copy is not None:
            copy.settled()  # its writes in flight first: the restore must see them
        close()  # a guest's memory of an older state goes with it
        self._copies[ref] = self._restore(ref, path, shard, epoch)

    def _restore(self, ref: ActorRef, path: Path, shard: int, epoch: int) -> Copy:
        started = time.perf_counter()
        delete_db_files(path)
        try:
            loaded = self.store.load(actor_key(ref))
        except StoreUnavailable as e:
            raise PeerUnavailable(f"{ref} cannot be restored now: the cluster's store "
                                  f"cannot be reached ({e}); retry shortly") from None
        except CorruptStore as e:
            log.error("%s cannot be restored: %s", ref, e)
            raise StorageFailed(f"{ref} cannot be restored: {e}") from None
        if loaded is None:
            return Copy(ref, shard, epoch, 0, self, new=True)
        if loaded.snapshot is None:
            raise StorageFailed(f"{ref} cannot be restored: changesets but no snapshot")
        path.parent.mkdir(parents=True, exist_ok=True)
        changesets = [cs for _, cs in loaded.changes]
        try:
            apply_changes.restore(path, loaded.snapshot, changesets)
        except apply_changes.RestoreMismatch as e:
            log.error("%s cannot be restored: %s", ref, e)
            raise StorageFailed(f"{ref} cannot be restored: {e}") from None
        log.info("%s: restored from the cluster's store (seq %d, %d changesets) in %.1f ms",
                 ref, loaded.last_seq, len(changesets),
                 (time.perf_counter() - started) * 1000)
        return Copy(ref, shard, epoch, loaded.last_seq, self,
                    logged=len(changesets), logged_bytes=sum(map(len, changesets)))

    def forget_shard(self, shard: int) -> list[ActorRef]:
        """The shard is no longer this node's: its copies are not trusted again. Returns
        the actors whose copies went."""
        with self._lock:
            gone = [ref for ref, c in self._copies.items() if c.shard == shard]
            for ref in gone:
                self._copies.pop(ref, None)
        return gone
