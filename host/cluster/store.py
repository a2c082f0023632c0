"""The cluster's store in PostgreSQL: the leases, the nodes and their classes, and every
actor's changesets and snapshots, fenced by its shard's lease. The tables are in
cluster/schema.py, the statements, and what each guarantees, in cluster/statements.py.

One connection per thread (cluster/connections.py): a broken one raises StoreUnavailable
and is replaced on the next call; reads, and writes that mean the same when repeated
(renewals, heartbeats), are tried once more on a new connection first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ClusterRefused
from .connections import Conn, Connections
from .loaded import Loaded, checked, sha256
from .schema import migrate
from .statements import ACQUIRE, APPEND, DELETE, LOAD, RELEASE, RENEW, SNAPSHOT

__all__ = ["AppendRow", "ClusterStore", "append_params"]

JOIN_KEY = 0x776B6A6F696E  # pg_advisory_xact_lock's key for joins ("wkjoin")


@dataclass
class AppendRow:
    """One changeset of one actor, fenced by its shard's lease at `epoch`."""

    actor: str
    shard: int
    epoch: int
    node_id: str
    seq: int
    cs: bytes
    alarm_at_ms: int | None
    attrs: str | None
    cls: str
    id: str


class ClusterStore:
    """The store, shared by the node's threads (each with its own connection)."""

    def __init__(self, url: str, shards: int = 256) -> None:
        self.url = url
        self.shards = shards
        self._db = Connections(url)

    # -- connections -------------------------------------------------------------------

    def connect_check(self) -> None:
        """Connect and migrate the schema. Raises StoreUnavailable if PostgreSQL cannot
        be reached, ClusterRefused if its schema is newer than this code's."""
        self._db.run(lambda conn: migrate(conn, self.shards), retry=True)

    def close(self) -> None:
        """Close every thread's connection (a later call opens a new one)."""
        self._db.close()

    def rows(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()
             ) -> list[tuple[Any, ...]]:
        """A read of the caller's (the listing: cluster/listing.py)."""
        return self._db.rows(sql, params)

    # -- nodes -------------------------------------------------------------------------

    def join(self, node_id: str, address: str, classes: dict[str, str]) -> None:
        """Record this node (heartbeat now). The first node's classes become the
        cluster's; any other node must serve exactly those, built the same (the
        sha256 of each component), else ClusterRefused names the difference."""
        def work(conn: Conn) -> None:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", [JOIN_KEY])
                known = {str(k): str(v) for k, v in
                         conn.execute("SELECT name, sha256 FROM cluster_classes")}
                if known:
                    _check_classes(known, classes)
                else:
                    with conn.cursor() as cur:
                        cur.executemany("INSERT INTO cluster_classes VALUES (%s, %s)",
                                        sorted(classes.items()))
                conn.execute(
                    "INSERT INTO nodes (node_id, address, heartbeat_at, started_at)"
                    " VALUES (%s, %s, clock_timestamp(), clock_timestamp())"
                    " ON CONFLICT (node_id) DO UPDATE SET address = excluded.address,"
                    " heartbeat_at = excluded.heartbeat_at, started_at = excluded.started_at",
                    [node_id, address])
        self._db.run(work, retry=True)

    def heartbeat(self, node_id: str) -> None:
        self._db.run(lambda conn: conn.execute(
            "UPDATE nodes SET heartbeat_at = clock_timestamp() WHERE node_id = %s",
            [node_id]), retry=True)

    def live_nodes(self, within_s: float) -> dict[str, str]:
        """node_id -> address of the nodes whose heartbeat is within `within_s`."""
        got = self.rows("SELECT node_id, address FROM nodes WHERE heartbeat_at >"
                        " clock_timestamp() - make_interval(secs => %s)", [within_s])
        return {str(n): str(a) for n, a in got}

    def leave(self, node_id: str) -> None:
        """This node is stopping: it counts as live no more, so the others take the
        shards it released at their next round, not once its heartbeat is a TTL old."""
        self._db.run(lambda conn: conn.execute(
            "UPDATE nodes SET heartbeat_at = '-infinity' WHERE node_id = %s",
            [node_id]), retry=True)

    # -- leases ------------------------------------------------------------------------

    def acquire(self, shard: int, node_id: str, ttl_s: float) -> int | None:
        """Take `shard` at a new epoch if its lease has expired or is this node's
        already (a restarted node takes its own again); the epoch, or None."""
        got = self._db.run(lambda conn: conn.execute(
            ACQUIRE, {"node": node_id, "ttl": ttl_s, "shard": shard}).fetchone())
        return None if got is None else int(got[0])

    def renew(self, node_id: str, held: dict[int, int], ttl_s: float) -> set[int]:
        """Extend the leases of `held` (shard -> epoch) that are still this node's at
        that epoch, in one statement; those shards."""
        params = _held(node_id, held) | {"ttl": ttl_s}
        got = self._db.run(lambda conn: conn.execute(RENEW, params).fetchall(), retry=True)
        return {int(r[0]) for r in got}

    def release(self, node_id: str, held: dict[int, int]) -> None:
        """Let go of `held` at once (expired now), where still this node's at that epoch."""
        self._db.run(lambda conn: conn.execute(RELEASE, _held(node_id, held)), retry=True)

    def owners(self) -> dict[int, tuple[str | None, int, bool]]:
        """shard -> (owner, epoch, whether the lease is still valid)."""
        return {s: (o, e, left > 0) for s, (o, e, left) in self.leases_left().items()}

    def leases_left(self) -> dict[int, tuple[str | None, int, float]]:
        """shard -> (owner, epoch, seconds its lease has left on PostgreSQL's clock; 0
        if it has expired)."""
        got = self.rows("SELECT shard, owner, epoch, CASE WHEN expires_at > c.t THEN"
                        " extract(epoch FROM expires_at - c.t) ELSE 0 END"
                        " FROM leases, (SELECT clock_timestamp() AS t) c")
        return {int(s): (o, int(e), float(left)) for s, o, e, left in got}

    def expired_shards(self) -> list[int]:
        got = self.rows("SELECT shard FROM leases WHERE expires_at <= clock_timestamp()"
                        " ORDER BY shard")
        return [int(r[0]) for r in got]

    # -- actors' data ------------------------------------------------------------------

    def append(self, actor: str, shard: int, epoch: int, node_id: str, seq: int, cs: bytes,
               alarm_at_ms: int | None, attrs: str | None, cls: str, id: str) -> bool:
        """Append one changeset, fenced; False if fenced out (or `seq` is there
        already): then nothing is written."""
        row = AppendRow(actor, shard, epoch, node_id, seq, cs, alarm_at_ms, attrs, cls, id)
        return self.append_many([row])[0]

    def append_many(self, rows: list[AppendRow]) -> list[bool]:
        """Append many changesets in one statement (group commit), each fenced by its
        own shard and epoch; for each row, whether it was written."""
        if not rows:
            return []
        params = append_params(rows)
        got = self._db.run(lambda conn: conn.execute(APPEND, params).fetchall())
        written = {(str(a), int(s)) for a, s in got}
        if len(written) < len(rows):  # a retry of a batch whose first try committed?
            written |= self._already(rows, written)
        out = []
        for r in rows:  # a (actor, seq) twice in a batch was written once, by the first
            out.append((r.actor, r.seq) in written)
            written.discard((r.actor, r.seq))
        return out

    def _already(self, rows: list[AppendRow], written: set[tuple[str, int]]
                 ) -> set[tuple[str, int]]:
        """Of the rows not written now, those in the log already at the same epoch with
        the same changeset: written by this batch's earlier try, whose answer was lost
        with its connection. Counted as written, not as refused."""
        left = [r for r in rows if (r.actor, r.seq) not in written]
        got = self._db.run(lambda conn: conn.execute(
            "SELECT c.actor, c.seq FROM changelog c JOIN unnest(%s::text[], %s::bigint[], "
            "%s::bigint[], %s::bytea[]) AS r(actor, seq, epoch, sha256) ON c.actor = r.actor "
            "AND c.seq = r.seq AND c.epoch = r.epoch AND c.sha256 = r.sha256",
            [[r.actor for r in left], [r.seq for r in left], [r.epoch for r in left],
             [sha256(r.cs) for r in left]]).fetchall(), retry=True)
        return {(str(a), int(q)) for a, q in got}

    def snapshot(self, actor: str, shard: int, epoch: int, node_id: str, seq: int,
                 db: bytes, alarm_at_ms: int | None, attrs: str | None, cls: str,
                 id: str) -> bool:
        """Store the actor's image at `seq` (an actor's first write is one, at seq 1)
        and drop the changesets it covers, fenced; False if fenced out or not newer."""
        params = {"actor": actor, "shard": shard, "epoch": epoch, "node": node_id,
                  "seq": seq, "db": db, "sha256": sha256(db), "alarm": alarm_at_ms,
                  "attrs": attrs, "cls": cls, "id": id}
        got = self._db.run(lambda conn: conn.execute(SNAPSHOT, params).fetchone())
        return bool(got and got[0])

    def delete_actor(self, actor: str, shard: int, epoch: int, node_id: str) -> bool:
        """Remove every row of the actor (it deleted itself), fenced; False if fenced out."""
        params = {"actor": actor, "shard": shard, "epoch": epoch, "node": node_id}
        got = self._db.run(lambda conn: conn.execute(DELETE, params).fetchone())
        return bool(got and got[0])

    def load(self, actor: str) -> Loaded | None:
        """The actor's snapshot and changesets, checked (CorruptStore); None if the
        store has nothing of it."""
        got = self.rows(LOAD, {"actor": actor})
        if not got:
            return None
        return checked(actor, got)

    def alarms_in(self, shards: list[int]) -> list[tuple[str, int]]:
        """(actor, alarm_at_ms) of the actors of `shards` that have an alarm."""
        got = self.rows("SELECT actor, alarm_at_ms FROM actors WHERE shard = ANY(%s)"
                        " AND alarm_at_ms IS NOT NULL ORDER BY actor", [shards])
        return [(str(a), int(t)) for a, t in got]

    def list_actors(self, cls: str, after: str, limit: int) -> list[str]:
        """Ids of the class's actors after `after`, in order, at most `limit`."""
        got = self.rows("SELECT id FROM actors WHERE cls = %s AND id > %s ORDER BY id"
                        " LIMIT %s", [cls, after, limit])
        return [str(r[0]) for r in got]

    def listed(self, cls: str) -> list[tuple[str, str | None]]:
        """(id, attrs) of every actor of the class, by id."""
        got = self.rows("SELECT id, attrs FROM actors WHERE cls = %s ORDER BY id", [cls])
        return [(str(i), a) for i, a in got]


def append_params(rows: list[AppendRow]) -> list[list[Any]]:
    """APPEND's parameters: one array per column."""
    return [[r.actor for r in rows], [r.seq for r in rows], [r.shard for r in rows],
            [r.epoch for r in rows], [r.node_id for r in rows], [r.cs for r in rows],
            [sha256(r.cs) for r in rows], [r.alarm_at_ms for r in rows],
            [r.attrs for r in rows], [r.cls for r in rows], [r.id for r in rows]]


def _held(node_id: str, held: dict[int, int]) -> dict[str, Any]:
    shards = sorted(held)
    return {"node": node_id, "shards": shards, "epochs": [held[s] for s in shards]}


def _check_classes(known: dict[str, str], mine: dict[str, str]) -> None:
    differ = [f"{name} (the cluster's {known[name][:12]}, this node's {mine[name][:12]})"
              for name in sorted(known.keys() & mine.keys()) if known[name] != mine[name]]
    if differ:
        raise ClusterRefused("this node's classes are built otherwise than the cluster's: "
                             + ", ".join(differ))
    missing, extra = sorted(known.keys() - mine.keys()), sorted(mine.keys() - known.keys())
    if missing or extra:
        said = ([f"it lacks {', '.join(missing)}"] if missing else []) + (
            [f"the cluster has no {', '.join(extra)}"] if extra else [])
        raise ClusterRefused("every node must serve the cluster's classes, no more and no "
                             "fewer: " + "; ".join(said))
