"""One durable alarm per actor: its row in the actor's database, and the `alarm` interface.

The actor's `_wk_host_alarm` row is the truth. `gen` is bumped by every set or clear the
guest makes, so after an event the host can tell whether the event touched the alarm,
from what was committed and not from what the guest attempted: a set inside a transaction
that was rolled back does not count.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core import event
from ..storage.actordb import ActorDb

if TYPE_CHECKING:
    from wasmtime.component import LinkerInstance


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
    db.sync_if_pending()


def host_clear(db: ActorDb) -> None:
    db.host_exec("UPDATE main._wk_host_alarm SET at_ms = NULL, retries = 0")


def host_retry(db: ActorDb, at_ms: int, retries: int) -> None:
    db.host_exec("UPDATE main._wk_host_alarm SET at_ms = ?, retries = ?", (at_ms, retries))


def retry_delay_ms(retries: int, base_ms: int, max_ms: int) -> int:
    return int(min(max_ms, base_ms * (2 ** min(retries, 30))))


def register(root: LinkerInstance, guard: Any) -> None:
    with root.add_instance("wk:host/alarm@0.1.0") as iface:
        iface.add_func("set", guard(_set))
        iface.add_func("get", guard(_get))
        iface.add_func("clear", guard(_clear))


def _set(_store: Any, at_ms: int) -> str | None:
    return _write(at_ms)


def _clear(_store: Any) -> str | None:
    return _write(None)


def _write(at_ms: int | None) -> str | None:
    ev = event.current()
    db = ev.slot.require_db()
    ev.alarm_touched = True
    try:
        guest_set(db, at_ms)
    except Exception as e:  # the size cap, a full disk: an error the guest may retry
        return f"alarm not saved: {e}"
    return None


def _get(_store: Any) -> int | None:
    return read(event.current().slot.require_db()).at_ms
