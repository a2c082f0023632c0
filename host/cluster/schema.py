"""The cluster's tables in PostgreSQL, versioned: `MIGRATIONS` in order, applied by
`migrate` under an advisory lock, each in one transaction with its row in `wk_schema`.

A store whose version is newer than this code's is refused: an older node would write
what a newer one no longer reads the same way. A migration is never edited once
released; a change of the schema is a new one at the end.

Version 1:
- `leases`: one row per shard (made here, never deleted). `epoch` is bumped by every
  acquisition and is the fencing token; `expires_at` is on PostgreSQL's clock.
- `nodes`: each node's address and last heartbeat. `cluster_classes`: the sha256 of
  each class's component, as the first node recorded it.
- `changelog`: each actor's changesets after its snapshot, one row per sequence
  number; `snapshots`: each actor's newest image. Every blob has its sha256 beside it.
- `actors`: one row per actor that has written: its shard, last sequence number, next
  alarm and published attributes (the listing and the alarms a gained shard brings).
  Ids compare bytewise (COLLATE "C"), as SQLite orders them on a single node.
"""

from __future__ import annotations

from typing import Any

import psycopg

from ..errors import ClusterRefused

# pg_advisory_lock's key for migrations: "wkschem" in ASCII, unlikely to meet another's.
LOCK_KEY = 0x776B736368656D

V1 = """
CREATE TABLE leases (
    shard      int PRIMARY KEY,
    owner      text,
    epoch      bigint NOT NULL DEFAULT 0,
    expires_at timestamptz NOT NULL DEFAULT '-infinity'
);
CREATE TABLE nodes (
    node_id      text PRIMARY KEY,
    address      text NOT NULL,
    heartbeat_at timestamptz,
    started_at   timestamptz
);
CREATE TABLE cluster_classes (
    name   text PRIMARY KEY,
    sha256 text NOT NULL
);
CREATE TABLE changelog (
    actor  text COLLATE "C" NOT NULL,
    seq    bigint NOT NULL,
    shard  int NOT NULL,
    epoch  bigint NOT NULL,
    cs     bytea NOT NULL,
    sha256 bytea NOT NULL,
    PRIMARY KEY (actor, seq)
);
CREATE TABLE snapshots (
    actor  text COLLATE "C" PRIMARY KEY,
    seq    bigint NOT NULL,
    epoch  bigint NOT NULL,
    db     bytea NOT NULL,
    sha256 bytea NOT NULL
);
CREATE TABLE actors (
    actor       text COLLATE "C" PRIMARY KEY,
    cls         text COLLATE "C" NOT NULL,
    id          text COLLATE "C" NOT NULL,
    shard       int NOT NULL,
    seq         bigint NOT NULL,
    alarm_at_ms bigint,
    attrs       text,
    updated_at  timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX actors_alarms ON actors (shard) WHERE alarm_at_ms IS NOT NULL;
CREATE INDEX actors_by_class ON actors (cls, id);
"""

MIGRATIONS: list[tuple[int, str]] = [(1, V1)]
LATEST = MIGRATIONS[-1][0]


def migrate(conn: psycopg.Connection[Any], shards: int = 256) -> int:
    """Bring the store to this code's version (nothing if it is there); returns the
    version. `conn` is in autocommit. Raises ClusterRefused if the store is newer."""
    conn.execute("SELECT pg_advisory_lock(%s)", [LOCK_KEY])
    try:
        conn.execute("CREATE TABLE IF NOT EXISTS wk_schema (version int PRIMARY KEY)")
        version = current_version(conn)
        if version > LATEST:
            raise ClusterRefused(
                f"the cluster's store has schema version {version}, newer than this "
                f"wkhost's ({LATEST}): upgrade this node to the cluster's wkhost")
        for number, ddl in MIGRATIONS:
            if number > version:
                with conn.transaction():
                    conn.execute(ddl)  # no parameters: several statements in one
                    conn.execute("INSERT INTO wk_schema (version) VALUES (%s)", [number])
                version = number
        conn.execute("INSERT INTO leases (shard) SELECT generate_series(0, %s - 1) "
                     "ON CONFLICT (shard) DO NOTHING", [shards])
        return version
    finally:
        if not conn.broken:  # a broken session has let go of its lock already
            conn.execute("SELECT pg_advisory_unlock(%s)", [LOCK_KEY])


def current_version(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute("SELECT coalesce(max(version), 0) FROM wk_schema").fetchone()
    return int(row[0]) if row else 0
