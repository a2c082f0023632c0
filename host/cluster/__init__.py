"""Cluster mode (`wkhost serve --cluster postgresql://...`): PostgreSQL as the durable
store of every node's actors, shard leases fenced by an epoch, and failover.

psycopg is imported here only, as apsw is only in storage/. docs/cluster.md has the
design, the guarantees and the failure modes.
"""
