"""An instance's parent and children: the notice a finished child owes its parent, and
the cancels a parent owes its children (the tables: registry.py).

The notice. A child that finishes (completed, failed or cancelled) tells its parent at
once, in the event that finished it: POST child-done to the parent, with its class, id,
run id, state, output (as stored) and error. If that call fails (the parent is in an
event of this call chain, it trapped, the host is going down), the notice stays owed,
durably, because owed is only "has a parent and not yet delivered" and the finish was
durable; the retained instance's alarms (`drain`) send it again, with backoff, until it
is delivered or MAX_TRIES have failed. Delivered: any 2xx, 404 (the parent is gone: past
its retention) and 409 (the parent finished): a parent that no longer waits makes the
notice a no-op. The parent records the notice as an event of a reserved name (registry.py's
`notice_event`), which the wait of its child's position consumes; a duplicate (the same
child and child run) is ignored.

The cancels. A parent that is cancelled owes a cancel to each child that is neither
detached nor done; `child.cancel_child` owes one to a child no longer wanted (a race's
loser). They are sent at once, then by `drain`, with the same backoff and delivery rules
(404: the child is gone; a finished child's cancel changes nothing).
"""

from __future__ import annotations

from typing import Any

from .. import cbor
from ..backend import Backend
from ..core import told
from ..core.store import Store
from ..core.values import decode, encode
from ..status import PREFIX
from . import watchers
from .registry import CHILDREN, DELIVERED, GIVEN_UP, OWED, PARENT, Registry

RETRY_MS = 1000
MAX_RETRY_MS = 600_000
MAX_TRIES = 30  # about four hours of tries at the longest backoff
# A notice's payload is the child's own output, already within the child's limit.
_NO_LIMIT = 2**62
_EMPTY = cbor.dumps({})
_TERMINATE = cbor.dumps({"reason": "its parent was terminated"})


def backoff(tries: int) -> int:
    return int(min(RETRY_MS * 2 ** min(tries - 1, 30), MAX_RETRY_MS))


class Notices:
    """What a finished instance owes its parent and its children (the runner's
    `Endings`, core/settle.py)."""

    def __init__(self, db: Backend) -> None:
        self.db = db
        self.registry = Registry(db)

    def finished(self, state: str, output: str | None, tagged: bool, error: str | None,
                 now: int) -> int | None:
        """The instance has just finished as `state` (durably). Returns when its alarm
        must fire to deliver what it owes (a parent's notice, its children's cancels),
        or None if it owes nothing. What it owes follows from the rows just written, so
        this is a first `drain`."""
        return self.drain(now)

    def drain(self, now: int) -> int | None:
        """Deliver what the finished instance owes. Returns when to try again, or None
        once nothing is owed."""
        tables = self.registry.tables()
        if not tables:
            return None
        due = []
        if PARENT in tables:
            due.append(self._notify(now))
        if CHILDREN in tables:
            due.extend(self._cancel_children(now))
        if watchers.WATCHERS in tables:
            due.extend(self._notify_watchers(now))
        times = [t for t in due if t is not None]
        return min(times) if times else None

    def _notify(self, now: int) -> int | None:
        row = self.registry.notice_owed()
        if row is None:
            return None
        pcls, pid, tries, next_at, run_id, state, output, tagged, error = row
        if next_at is not None and now < next_at:
            return int(next_at)
        failed = self._send_notice(pcls, pid, run_id, state, output, tagged, error)
        if failed is None:
            self.registry.notice_done(DELIVERED, tries, None, None)
            return None
        tries += 1
        if tries >= MAX_TRIES:
            self.registry.notice_done(GIVEN_UP, tries, None, failed)
            return None
        at = now + backoff(tries)
        self.registry.notice_done(OWED, tries, at, failed)
        return at

    def _notify_watchers(self, now: int) -> list[int | None]:
        """Each watcher's notice (watchers.py), as the parent's is sent."""
        out: list[int | None] = []
        for cls, id, tries, next_at, run_id, state, output, tagged, error in \
                watchers.owed(self.db):
            if next_at is not None and now < next_at:
                out.append(int(next_at))
                continue
            failed = self._send_notice(cls, id, run_id, state, output, tagged, error)
            tries += 1
            at = None if failed is None or tries >= MAX_TRIES else now + backoff(tries)
            kind = watchers.DELIVERED if failed is None else \
                watchers.OWED if at is not None else watchers.GIVEN_UP
            watchers.done(self.db, cls, id, kind, tries, at, failed)
            out.append(at)
        return out

    def _send_notice(self, cls: str, id: str, run_id: str, state: str, output: str | None,
                     tagged: Any, error: str | None) -> str | None:
        """This instance's end, told to `cls`/`id` (child-done): None once delivered."""
        me = self.db.self_ref()
        body = cbor.dumps({"cls": me[0], "id": me[1], "run_id": run_id, "state": state,
                           "output": output, "tagged": bool(tagged), "error": error})
        return _send(self.db, cls, id, "child-done", body, (404, 409))

    def _cancel_children(self, now: int) -> list[int | None]:
        out: list[int | None] = []
        for id, cls, tries, next_at, terminate in self.registry.cancels_owed():
            if next_at is not None and now < next_at:
                out.append(next_at)
            else:
                out.append(send_cancel(self.db, self.registry, id, cls, tries, now, terminate))
        return out


def send_cancel(db: Backend, registry: Registry, id: str, cls: str, tries: int, now: int,
                terminate: bool = False) -> int | None:
    """Cancel child `cls`/`id` now (`terminate`: terminate it, its parent was). Returns
    when to try again (the cancel stays owed), or None: delivered, or given up after
    MAX_TRIES. A child whose runner has no terminate route answers 404: it counts as
    delivered, as for a child that is gone."""
    route = "terminate" if terminate else "cancel"
    failed = _send(db, cls, id, route, _TERMINATE if terminate else _EMPTY, (404,))
    if failed is None:
        registry.cancel_delivered(id)
        return None
    tries += 1
    at = None if tries >= MAX_TRIES else now + backoff(tries)
    registry.cancel_failed(id, tries, at, failed)
    return at


def _send(db: Backend, cls: str, id: str, route: str, body: bytes,
          delivered: tuple[int, ...]) -> str | None:
    """One call of `route` to `cls`/`id`. None if delivered (2xx or one of `delivered`),
    else why not."""
    try:
        status, _ = db.call(cls, id, "POST", PREFIX + route, body)
    except Exception as e:
        return f"{route} to {cls}/{id} failed: {e}"[:1000]
    if 200 <= status < 300 or status in delivered:
        return None
    return f"{route} to {cls}/{id} answered {status}"


# -- the parent's side: a notice received (the child-done route) ----------------------

def record_notice(store: Store, msg: dict[str, Any], parked: bool) -> bool:
    """Record child-done's notice `msg` as the event its parent's wait takes: durably,
    with the alarm to now first (not for a parked instance). False for a duplicate.
    Raises ValueError (naming the field) for a malformed notice."""
    cls, id, run_id, state = (_text(msg, k) for k in ("cls", "id", "run_id", "state"))
    if state not in ("completed", "failed", "cancelled", "terminated"):
        raise ValueError("'state' must be completed, failed, cancelled or terminated, "
                         f"not {state!r}")
    output, tagged, error = msg.get("output"), msg.get("tagged"), msg.get("error")
    if not (output is None or isinstance(output, str)) or not isinstance(tagged, bool):
        raise ValueError("'output' must be stored JSON text or null, 'tagged' a bool")
    if not (error is None or isinstance(error, str)):
        raise ValueError("'error' must be text or null")
    value = None if output is None else decode(output, tagged)
    text, tagged = encode({"run_id": run_id, "state": state, "output": value,
                           "error": error}, _NO_LIMIT, "the child's notice")
    db = store.db
    now = db.now()
    if not parked:
        db.alarm_set(now)  # first: the notice's durable COMMIT syncs it too
    taken = Registry(db).take_notice(id, cls, run_id, text, tagged, now)
    if taken and state != "completed":
        told.child_failed(db, store.rows, f"{cls}/{id}", run_id, state, error)
    return taken


def _text(msg: dict[str, Any], key: str) -> str:
    v = msg.get(key)
    if not isinstance(v, str) or not v:
        raise ValueError(f"{key!r} must be a non-empty text")
    return v
