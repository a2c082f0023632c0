"""What cluster mode asks of an actor's database (core/replication.py does it): where
its committed changes go instead of the WAL's fsync, and which statements changesets do
not carry."""

from __future__ import annotations

from typing import Any, Protocol

import apsw

# What changesets do not carry (storage/changes.py): after any of it, a snapshot goes.
DDL = frozenset({
    apsw.SQLITE_CREATE_TABLE, apsw.SQLITE_CREATE_INDEX, apsw.SQLITE_CREATE_TRIGGER,
    apsw.SQLITE_CREATE_VIEW, apsw.SQLITE_DROP_TABLE, apsw.SQLITE_DROP_INDEX,
    apsw.SQLITE_DROP_TRIGGER, apsw.SQLITE_DROP_VIEW, apsw.SQLITE_ALTER_TABLE,
    apsw.SQLITE_REINDEX})


class Replica(Protocol):
    """Where an actor's committed changes go in cluster mode, instead of the WAL's fsync."""

    def durable(self, db: Any) -> None:
        """Every change committed so far is durable once this returns."""
        ...

    def lazy(self, db: Any) -> None:
        """The changes committed so far go soon, without waiting (what `exec` leaves)."""
        ...

    def deleted(self) -> None:
        """The actor deleted itself: it goes from the store too, once this returns."""
        ...
