"""One durable alarm per actor: its row in the actor's database.

The actor's `_wk_host_alarm` row is the truth. `gen` is bumped by every set or clear the
guest makes, so after an event the host can tell whether the event touched the alarm,
from what was committed and not from what the guest attempted: a set inside a transaction
that was rolled back does not count.
"""

from __future__ import annotations

from dataclasses import dataclass

from .actordb import ActorDb


@dataclass(frozen=True)
class AlarmRow:
    at_ms: int | None
    gen: int
    retries: int


# The row of a database made from the template (or a schema image: the host's tables
# are the template's there too).
NONE = AlarmRow(None, 0, 0)


def read(db: ActorDb) -> AlarmRow:
    at_ms, gen, retries = db.host_exec("SELECT at_ms, gen, retries FROM main._wk_host_alarm")[0]
    return AlarmRow(at_ms, gen, retries)


def guest_set(db: ActorDb, at_ms: int | None) -> None:
    db.host_exec("UPDATE main._wk_host_alarm SET at_ms = ?, gen = gen + 1, retries = 0", (at_ms,))
    if db.replica is not None:  # cluster mode: committed like exec-durable, to survive failover
        db.durable_pending = True
    db.sync_if_pending()


def host_clear(db: ActorDb) -> None:
    db.host_exec("UPDATE main._wk_host_alarm SET at_ms = NULL, retries = 0")


def host_retry(db: ActorDb, at_ms: int, retries: int) -> None:
    db.host_exec("UPDATE main._wk_host_alarm SET at_ms = ?, retries = ?", (at_ms, retries))


def retry_delay_ms(retries: int, base_ms: int, max_ms: int) -> int:
    return int(min(max_ms, base_ms * (2 ** min(retries, 30))))
