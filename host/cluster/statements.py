"""The store's statements (cluster/store.py runs them), each one round trip and one
transaction.

Every write of an actor's data checks its shard's lease in the same statement:

    ... SELECT ... FROM leases WHERE shard = $s AND owner = $me AND epoch = $e FOR SHARE

No row means another node has taken the shard (a new epoch): nothing is written and
the call answers False. The lock must be FOR SHARE: an acquisition's UPDATE of the lease
row then waits for a write in flight, and the new owner's restore sees it. (FOR KEY
SHARE does not conflict with that UPDATE: the design record lost a write with it.)

Every statement that locks several lease rows locks them in shard order, so that a
batch of appends and a renewal never deadlock. Times are PostgreSQL's
(`clock_timestamp()`): nodes' clocks need not agree.
"""

# The actor's row follows its newest write (a late, older one does not move it back).
_UPSERT_ACTOR = """
  ON CONFLICT (actor) DO UPDATE SET shard = excluded.shard, seq = excluded.seq,
     alarm_at_ms = excluded.alarm_at_ms, attrs = excluded.attrs,
     updated_at = excluded.updated_at
   WHERE actors.seq < excluded.seq"""

# Changesets, one row each, in one statement for a batch (group commit): each row is
# written only if its own shard's lease is held by its node at its epoch. A (actor, seq)
# already there is not written again (a retried batch whose first try committed): the
# row answers False, as fenced. Returns the rows written.
APPEND = """
WITH r AS (
  SELECT * FROM unnest(%s::text[], %s::bigint[], %s::int[], %s::bigint[], %s::text[],
                       %s::bytea[], %s::bytea[], %s::bigint[], %s::text[], %s::text[],
                       %s::text[])
    AS r(actor, seq, shard, epoch, node, cs, sha256, alarm_at_ms, attrs, cls, id)
), ins AS (
  INSERT INTO changelog (actor, seq, shard, epoch, cs, sha256)
  SELECT r.actor, r.seq, r.shard, r.epoch, r.cs, r.sha256
    FROM r JOIN leases l ON l.shard = r.shard AND l.owner = r.node AND l.epoch = r.epoch
   ORDER BY l.shard
     FOR SHARE OF l
  ON CONFLICT (actor, seq) DO NOTHING
  RETURNING actor, seq
), up AS (
  INSERT INTO actors (actor, cls, id, shard, seq, alarm_at_ms, attrs, updated_at)
  SELECT DISTINCT ON (r.actor) r.actor, r.cls, r.id, r.shard, r.seq, r.alarm_at_ms,
         r.attrs, clock_timestamp()
    FROM r JOIN ins ON ins.actor = r.actor AND ins.seq = r.seq
   ORDER BY r.actor, r.seq DESC""" + _UPSERT_ACTOR + """
)
SELECT actor, seq FROM ins"""

# An actor's image at seq, fenced, only if newer than the one stored; the changesets it
# covers are deleted and the actor's row moved, in the same statement. Returns 1 or 0.
SNAPSHOT = """
WITH lease AS (
  SELECT shard FROM leases
   WHERE shard = %(shard)s AND owner = %(node)s AND epoch = %(epoch)s
     FOR SHARE
), snap AS (
  INSERT INTO snapshots (actor, seq, epoch, db, sha256)
  SELECT %(actor)s::text, %(seq)s::bigint, %(epoch)s::bigint, %(db)s::bytea,
         %(sha256)s::bytea FROM lease
  ON CONFLICT (actor) DO UPDATE SET seq = excluded.seq, epoch = excluded.epoch,
     db = excluded.db, sha256 = excluded.sha256
   WHERE snapshots.seq < excluded.seq
  RETURNING seq
), folded AS (
  DELETE FROM changelog WHERE actor = %(actor)s AND seq <= (SELECT seq FROM snap)
), up AS (
  INSERT INTO actors (actor, cls, id, shard, seq, alarm_at_ms, attrs, updated_at)
  SELECT %(actor)s::text, %(cls)s::text, %(id)s::text, %(shard)s::int, seq,
         %(alarm)s::bigint, %(attrs)s::text, clock_timestamp() FROM snap""" + _UPSERT_ACTOR + """
)
SELECT count(*) FROM snap"""

# Every row of an actor that deleted itself, fenced. Returns 1 (deleted) or 0 (fenced).
DELETE = """
WITH lease AS (
  SELECT shard FROM leases
   WHERE shard = %(shard)s AND owner = %(node)s AND epoch = %(epoch)s
     FOR SHARE
), c AS (DELETE FROM changelog WHERE actor = %(actor)s AND EXISTS (SELECT FROM lease)),
   s AS (DELETE FROM snapshots WHERE actor = %(actor)s AND EXISTS (SELECT FROM lease)),
   a AS (DELETE FROM actors WHERE actor = %(actor)s AND EXISTS (SELECT FROM lease))
SELECT count(*) FROM lease"""

# One statement reads it all, so from one snapshot of the store: the snapshot ('s'),
# the changesets after it ('c'), and the actor's row ('a', its last seq).
LOAD = """
SELECT 'a', seq, NULL::bytea, NULL::bytea FROM actors WHERE actor = %(actor)s
UNION ALL
SELECT 'c', seq, cs, sha256 FROM changelog
 WHERE actor = %(actor)s
   AND seq > coalesce((SELECT seq FROM snapshots WHERE actor = %(actor)s), 0)
UNION ALL
SELECT 's', seq, db, sha256 FROM snapshots WHERE actor = %(actor)s
ORDER BY 1, 2"""

# Only if expired, or already this node's (a restarted node takes its own again); the
# new epoch is the fencing token. It waits for a write in flight to commit (the write
# holds the row FOR SHARE), so that write is in the store before the new epoch is.
ACQUIRE = """
UPDATE leases SET owner = %(node)s, epoch = epoch + 1,
       expires_at = clock_timestamp() + make_interval(secs => %(ttl)s)
 WHERE shard = %(shard)s AND (expires_at < clock_timestamp() OR owner = %(node)s)
RETURNING epoch"""

# The held leases that still match, locked in shard order, then changed.
_HELD = """
  (SELECT k.shard FROM unnest(%(shards)s::int[], %(epochs)s::bigint[]) AS h(shard, epoch)
     JOIN leases k ON k.shard = h.shard AND k.epoch = h.epoch AND k.owner = %(node)s
    ORDER BY k.shard FOR UPDATE OF k) AS held"""
RENEW = ("UPDATE leases l SET expires_at = clock_timestamp() + make_interval(secs => %(ttl)s)"
         " FROM" + _HELD + " WHERE l.shard = held.shard RETURNING l.shard")
RELEASE = ("UPDATE leases l SET expires_at = '-infinity' FROM" + _HELD
           + " WHERE l.shard = held.shard")
