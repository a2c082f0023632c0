"""An actor's working copy in cluster mode as its database and the event's end see it
(replication/copy.py's Copy): where its committed changes go instead of the WAL's fsync.
The database calls `durable` at its durable points; settle (events/settle.py) calls
`lazy` and `deleted` on the copy itself at the event's end."""

from __future__ import annotations

from typing import Any, Protocol


class WorkingCopy(Protocol):
    """Where an actor's committed changes go in cluster mode, instead of the WAL's fsync."""

    @property
    def lost(self) -> Exception | None:
        """Why a write was refused, once one was: nothing after it may be acknowledged."""
        ...

    def durable(self, db: Any) -> None:
        """Every change committed so far is durable once this returns."""
        ...

    def lazy(self, db: Any) -> None:
        """The changes committed so far go soon, without waiting (what `exec` leaves)."""
        ...

    def deleted(self) -> None:
        """The actor deleted itself: it goes from the store too, once this returns."""
        ...
