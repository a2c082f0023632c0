"""One fire of a schedule's alarm: which fire times are due, what each one does, and
doing it.

A fire first plans, in one durable transaction (store.py): of the fire times since the
last one handled, those to start (on time, and the catch-up's), those missed, and the
next fire time. Then it does each planned start, and records its outcome durably. A
crash anywhere leaves the alarm where it was, so the next event does the rest of the
plan; the instance's id is the schedule's name and its fire time, and a start is
idempotent, so a fire repeated after a crash finds its instance there and never starts
a second one.

Overlap "skip" asks the target for the status of the last instance the schedule
started: one that is not finished (or gone past its retention) means no start.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from ..workflow.backend import Backend, CallFailed
from ..workflow.client import Client, Transport
from ..workflow.errors import WorkflowError
from .cron import Cron
from .spec import Spec
from .store import Fire, Row, Store

__all__ = ["Plan", "due_times", "fire", "instance_id", "iso", "plan"]

# Due times looked at beyond the most a fire may start: after a longer downtime, the
# older ones are not counted (the count of missed fires is then a lower bound).
WALK = 64
_EPOCH = datetime(1970, 1, 1)


def iso(ms: int) -> str:
    """A fire time as its instance id shows it: 2026-01-01T03:00Z (UTC)."""
    return (_EPOCH + timedelta(milliseconds=ms)).strftime("%Y-%m-%dT%H:%MZ")


def instance_id(schedule: str, fire_at: int) -> str:
    return f"{schedule}-{iso(fire_at)}"


@dataclass(frozen=True)
class Plan:
    starts: list[int]       # fire times to start, oldest first
    missed: list[int]       # the missed ones looked at, newest first
    missed_count: int
    next_fire: int | None   # the first fire time after now


def due_times(cron: Cron, since: int, now: int, limit: int) -> list[int]:
    """Fire times from `since` to `now`, both included, newest first, at most `limit`."""
    out: list[int] = []
    t = cron.latest_at(now)
    while t is not None and t >= since and len(out) < limit:
        out.append(t)
        t = cron.latest_at(t - 1)
    return out


def plan(spec: Spec, cron: Cron, since: int, now: int) -> Plan:
    """What a fire at `now` does with the fire times from `since` on (see spec.py)."""
    due = due_times(cron, since, now, spec.starts_missed + WALK)
    on_time = [t for t in due if now - t <= spec.grace_ms]
    late = [t for t in due if now - t > spec.grace_ms]
    missed = late[spec.starts_missed:]
    return Plan(sorted(on_time + late[:spec.starts_missed]), missed, len(missed),
                cron.next_after(now))


def fire(db: Backend, store: Store, name: str, row: Row) -> None:
    """The alarm's work: plan if nothing is planned and a fire time is due, do what is
    planned, and set the alarm to the next fire time. Raises WorkflowError("call") when
    a call to the target failed: the host retries the alarm, and the plan goes on."""
    now = db.now()
    if not store.planned() and row.next_fire is not None and row.next_fire <= now:
        p = plan(row.spec, row.spec.parsed(), row.next_fire, now)
        store.plan([(t, instance_id(name, t)) for t in p.starts],
                   [(t, instance_id(name, t)) for t in p.missed], p.missed_count,
                   p.next_fire, now)
    client = Client(row.spec.target, transport=_transport(db, row.spec.target))
    last = row.last_instance
    for f in store.planned():
        outcome, note = _start(client, row.spec, f, last, store)
        store.fired(f, outcome, note, db.now())
        if outcome in ("started", "existed"):
            last = f.instance
    after = store.row()
    if after is not None and after.next_fire is not None and not after.paused:
        db.alarm_set(after.next_fire)
    store.trim()


def _start(client: Client, spec: Spec, f: Fire, last: str | None,
           store: Store) -> tuple[str, str | None]:
    """(outcome, note) of one planned fire."""
    try:
        if spec.overlap == "skip" and last is not None and last != f.instance:
            busy = _unfinished(client, last)
            if busy is not None:
                return "skipped", f"{last} is {busy}"
        status = client.start(f.instance, spec.input)
    except WorkflowError as e:
        if e.kind != "call":
            return "failed", f"{e.kind}: {e}"
        store.note(f, f"retrying: {e}")
        raise
    return ("started" if status.created else "existed"), None


def _unfinished(client: Client, id: str) -> str | None:
    """The state of instance `id` if it is not finished; None if it is, or is gone."""
    try:
        status = client.status(id)
    except WorkflowError as e:
        if e.kind == "unknown":  # past its retention: finished long ago
            return None
        raise
    return None if status.is_finished else status.state


def _transport(db: Backend, cls: str) -> Transport:
    """The Client's calls through the Backend (its headers say wk-workflow/v1)."""

    def send(id: str, method: str, path: str, body: bytes) -> tuple[int, bytes]:
        try:
            return db.call(cls, id, method, path, body)
        except CallFailed as e:
            if e.kind == "not-declared":
                raise WorkflowError("not-a-workflow", f"class {cls!r} is not a workflow "
                                    f"class ({e})") from None
            raise WorkflowError("call", str(e)) from None

    return send
