"""The host's own rows in an actor's database: its one durable alarm, and its meta.

The actor's `_wk_host_alarm` row is the truth. `gen` is bumped by every set or clear the
guest makes, so after an event the host can tell whether the event touched the alarm,
from what was committed and not from what the guest attempted: a set inside a transaction
that was rolled back does not count.

`_wk_host_meta` holds the actor's class and id, whether its on-init finished
(`initialized`), why its last event trapped (`trap`, `trap_detail`), and what it published
(`attrs`: storage/attributes.py's record, written by storage/published.py).

The database is a protocol here, not actordb's ActorDb, because ActorDb's own part
(published.py) writes through this module; the index's rebuild reads the rows over a
bare connection (`read_bare`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import apsw

from .working_copy import WorkingCopy


class HostExec(Protocol):
    """An actor's database as the host's statements need it (storage/actordb.py)."""

    def host_exec(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]: ...


class Db(HostExec, Protocol):
    """And as its alarm and meta rows need it."""

    working_copy: WorkingCopy | None
    durable_pending: bool

    def first_host_write(self, sql: str, params: Sequence[Any] = ()) -> None: ...

    def sync_if_pending(self) -> None: ...


@dataclass(frozen=True)
class AlarmRow:
    at_ms: int | None
    gen: int
    retries: int


# The row of a database made from the template (or a schema image: the host's tables
# are the template's there too).
NONE = AlarmRow(None, 0, 0)


def read(db: Db) -> AlarmRow:
    at_ms, gen, retries = db.host_exec("SELECT at_ms, gen, retries FROM main._wk_host_alarm")[0]
    return AlarmRow(at_ms, gen, retries)


def alarm_at(db: Db) -> int | None:
    at_ms: int | None = db.host_exec("SELECT at_ms FROM main._wk_host_alarm")[0][0]
    return at_ms


def guest_set(db: Db, at_ms: int | None) -> None:
    db.host_exec("UPDATE main._wk_host_alarm SET at_ms = ?, gen = gen + 1, retries = 0", (at_ms,))
    if db.working_copy is not None:  # cluster mode: committed like exec-durable (failover)
        db.durable_pending = True
    db.sync_if_pending()


def host_clear(db: Db) -> None:
    db.host_exec("UPDATE main._wk_host_alarm SET at_ms = NULL, retries = 0")


def host_retry(db: Db, at_ms: int, retries: int) -> None:
    db.host_exec("UPDATE main._wk_host_alarm SET at_ms = ?, retries = ?", (at_ms, retries))


def retry_delay_ms(retries: int, base_ms: int, max_ms: int) -> int:
    return int(min(max_ms, base_ms * (2 ** min(retries, 30))))


# -- meta --------------------------------------------------------------------------------
def read_meta(db: Db) -> dict[str, Any]:
    return dict(db.host_exec("SELECT k, v FROM main._wk_host_meta"))


def first_meta(db: Db, cls: str, actor_id: str) -> None:
    """A new actor's meta, as its database's first write (ActorDb.first_host_write)."""
    db.first_host_write("INSERT OR REPLACE INTO main._wk_host_meta VALUES ('class', ?), "
                        "('id', ?), ('initialized', 0)", (cls, actor_id))


def mark_initialized(db: Db) -> None:
    db.host_exec("UPDATE main._wk_host_meta SET v = 1 WHERE k = 'initialized'")


def keep_trap(db: Db, detail: Sequence[Any]) -> None:
    """`detail`: the message and the encoded detail, written and removed together."""
    db.host_exec("INSERT OR REPLACE INTO main._wk_host_meta VALUES ('trap', ?), "
                 "('trap_detail', ?)", detail)


def forget_trap(db: Db) -> None:
    db.host_exec("DELETE FROM main._wk_host_meta WHERE k IN ('trap', 'trap_detail')")


def write_attrs(db: HostExec, encoded: str | None) -> None:
    db.host_exec("INSERT OR REPLACE INTO main._wk_host_meta VALUES ('attrs', ?)", (encoded,))


def read_attrs(db: HostExec) -> str | None:
    rows = db.host_exec("SELECT v FROM main._wk_host_meta WHERE k = 'attrs'")
    return str(rows[0][0]) if rows else None


def read_bare(conn: apsw.Connection) -> tuple[dict[str, Any], int | None]:
    """The meta and the alarm's time over a bare connection (the index's rebuild)."""
    meta = dict(conn.execute("SELECT k, v FROM main._wk_host_meta"))
    alarm = conn.execute("SELECT at_ms FROM main._wk_host_alarm").fetchall()
    return meta, (int(alarm[0][0]) if alarm and alarm[0][0] is not None else None)
