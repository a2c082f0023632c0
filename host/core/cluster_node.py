"""This node's part in a cluster (`wkhost serve --cluster ...`): its store, its leases
and its working copies, and what the host does when a shard comes or goes.

- Before the host opens anything, the data directory's working copies and its index
  are removed: they are of an earlier run, whose epochs are over (every start takes its
  shards at new epochs), so none is trusted; each actor is restored when first touched.
- A shard gained: the actors of it with an alarm pending, read from the store, are put
  in the scheduler, so that their alarms fire here (a fire restores the actor).
- A shard lost: its copies are no longer trusted, and its alarms leave the scheduler.
"""

from __future__ import annotations

import hashlib
import logging
import shutil
from pathlib import Path
from typing import Protocol

from ..cluster.connections import StoreUnavailable
from ..cluster.leases import LeaseKeeper
from ..cluster.listing import Filters, count_sql, page_sql
from ..cluster.placement import ClusterPlacement
from ..cluster.store import ClusterStore
from ..config import HostConfig
from ..errors import ClusterRefused
from ..events.alarms import Alarms
from ..partition import shard_of
from ..replication.copy import ref_of
from ..replication.restore import Replication
from ..storage.attributes import decoded
from ..storage.index import Index
from ..storage.listing import Listed, ListQuery


class Served(Protocol):
    """What of the Host a node touches when a shard comes or goes (no import of the
    Host: it holds the node)."""

    index: Index
    alarms: Alarms

log = logging.getLogger("wkhost")


def class_hashes(actors: list[tuple[str, Path]]) -> dict[str, str]:
    """Each class's component, by the sha256 of its file: every node must agree."""
    return {name: hashlib.sha256(wasm.read_bytes()).hexdigest() for name, wasm in actors}


def discard_working_copies(data_dir: Path, host_dir: Path) -> None:
    shutil.rmtree(data_dir / "actors", ignore_errors=True)
    for name in ("index.db", "index.db-wal", "index.db-shm"):
        (host_dir / name).unlink(missing_ok=True)


_MIN_SECRET = 16


def read_secret(path: Path | None) -> bytes:
    """The cluster's shared secret (net/cluster_auth.py), from --cluster-secret-file."""
    if path is None:
        raise ClusterRefused("--cluster needs --cluster-secret-file FILE, the same on every "
                             "node (e.g. made with: head -c 32 /dev/urandom | base64 > FILE)")
    try:
        secret = path.read_bytes().strip()
    except OSError as e:
        raise ClusterRefused(f"--cluster-secret-file {path}: {e.strerror}") from None
    if len(secret) < _MIN_SECRET:
        raise ClusterRefused(f"--cluster-secret-file {path}: the secret must be at least "
                             f"{_MIN_SECRET} bytes")
    return secret


class ClusterNode:
    def __init__(self, config: HostConfig, address: str, classes: dict[str, str]) -> None:
        if not config.node_id:
            raise ClusterRefused("--cluster needs --node-id NAME")
        self.node_id = config.node_id
        self.address = address
        self.secret = read_secret(config.cluster_secret_file)
        self.store = ClusterStore(config.cluster_url)
        try:
            self.keeper = LeaseKeeper(
                self.store, config.node_id, address, classes, config.lease_ttl_s,
                config.lease_renew_s, config.lease_deadline_s,
                on_gained=self._gained, on_lost=self._lost)
        except ValueError as e:
            raise ClusterRefused(str(e)) from None
        self.replication = Replication(self.store, self.keeper, config.node_id,
                                       config.snapshot_every, config.snapshot_bytes)
        self.placement = ClusterPlacement(self.keeper, config.node_id)
        self._host: Served | None = None

    def start(self, host: Served) -> None:
        """Join (refused if this node's classes differ from the cluster's), then take
        shards. The host must be started: gained shards' alarms go to its scheduler."""
        self._host = host
        try:
            self.store.connect_check()
        except StoreUnavailable as e:
            raise ClusterRefused(f"the cluster's store cannot be reached: {e}") from None
        self.replication.start()
        self.keeper.start()

    def close(self) -> None:
        """After the host's events have ended: send what is queued, then hand the
        shards over at once (released, not left to expire). The host is closed: its
        index and scheduler are not told of the shards released."""
        self._host = None
        self.replication.close()
        self.keeper.stop(release=True)
        self.store.close()

    def list_page(self, q: ListQuery, count: bool) -> tuple[list[Listed], int | None]:
        """One page of `q` over every node's actors, from the store's table of them
        (cluster/listing.py)."""
        f = Filters(q.cls, q.statuses, q.since, q.until, q.labels, q.order, q.after, q.limit)
        sql, params = page_sql(f)
        rows = [_listed(str(actor_id), attrs) for actor_id, attrs in self.store.rows(sql, params)]
        total = None
        if count:
            sql, params = count_sql(f)
            total = int(self.store.rows(sql, params)[0][0])
        return rows, total

    def _gained(self, shard: int, epoch: int) -> None:
        host = self._host
        if host is None:
            return
        alarms = self.store.alarms_in([shard])
        for key, at_ms in alarms:
            ref = ref_of(key)
            host.index.set_alarm(ref, at_ms)
            host.alarms.scheduler.set(ref, at_ms)
        log.debug("took shard %d at epoch %d (%d alarms pending)", shard, epoch, len(alarms))

    def _lost(self, shard: int) -> None:
        """The shard is not this node's from now (the keeper's epoch() says so already):
        what its actors queued goes to the store first, so that a hand-over's taker
        finds it; then its copies and alarms are forgotten here."""
        host = self._host
        if not self.replication.writer.drain():
            log.warning("shard %d let go of with writes still on their way to the store",
                        shard)
        self.replication.forget_shard(shard)
        if host is None:
            return
        for ref, _ in host.index.alarms():
            if shard_of(ref.id) == shard:
                host.alarms.scheduler.set(ref, None)
                host.index.set_alarm(ref, None)
        log.debug("let go of shard %d", shard)


def _listed(actor_id: str, attrs: str | None) -> Listed:
    a = decoded(attrs)
    if a is None:
        return Listed(actor_id)
    return Listed(actor_id, a.status, a.updated_ms, dict(a.labels), a.first_ms)
