"""A schedule as an actor: its routes (wk-schedule/v1), its init and its alarm.

Each schedule is one actor of the schedule class (`wkhost serve --schedules` serves it
as `schedules`, internal), its id the schedule's name. Routes, JSON bodies:

    create    POST      define it (spec.py's fields) and set its alarm to the first
                        fire time; 409 "exists" if it is defined already; 400
                        "not-served" or "not-a-workflow" for a target that is not a
                        workflow class served here (target.py)
    describe  GET|POST  the definition, paused, the next fire times, the counts and
                        the newest fires (`fires`: how many, default 20, at most 100)
    pause     POST      no fire until resumed: the alarm is cleared
    resume    POST      fire again from the next fire time after now (the fire times
                        that passed while it was paused are not caught up)
    delete    POST      the schedule goes (its database and alarm); the instances it
                        started are left as they are

Only actors and operators are answered (403 otherwise). A request to a name that is
not defined leaves nothing behind: the actor made for it deletes itself.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

from ..workflow.backend import Backend
from ..workflow.errors import StoreFault
from . import fire, target
from .spec import Spec, SpecError
from .store import HISTORY, Row, Store

__all__ = ["PREFIX", "Reply", "Schedules"]

PREFIX = "/wk-schedule/v1/"
CONTENT_TYPE = "application/json"
_ROUTES = {"create": "POST", "describe": "GET POST", "pause": "POST", "resume": "POST",
           "delete": "POST"}
NEXT_SHOWN = 3


class Reply(NamedTuple):
    """A route's answer: the HTTP status, the JSON body and its headers."""

    status: int
    body: bytes
    headers: list[tuple[str, str]]


def reply(doc: dict[str, Any], status: int = 200) -> Reply:
    return Reply(status, json.dumps(doc).encode(), [("content-type", CONTENT_TYPE)])


def refuse(status: int, kind: str, message: str) -> Reply:
    return reply({"error": kind, "message": message}, status)


class Schedules:
    """One schedule's routes, init and alarm (see the module's doc), over its tables."""

    def __init__(self, db: Backend) -> None:
        self.db = db
        self.store = Store(db)

    def init(self) -> None:
        self.store.init_schema()

    def name(self) -> str:
        return self.db.self_ref()[1]

    def on_alarm(self) -> None:
        row = self.store.row()
        if row is None or row.paused:
            return  # nothing to fire: the host clears the alarm
        fire.fire(self.db, self.store, self.name(), row)

    def handle(self, method: str, path: str, body: bytes, sender: str) -> Reply:
        """Answer one request; never raises (storage trouble is 503)."""
        try:
            row = self.store.row()
            out = self._dispatch(method, path, body, sender, row)
            if row is None and out.status != 200:
                self.db.delete_self()  # never defined: leave nothing behind
            return out
        except StoreFault as e:
            return refuse(503, "storage", f"the schedule's storage failed: {e}")

    def _dispatch(self, method: str, path: str, body: bytes, sender: str,
                  row: Row | None) -> Reply:
        route = path.removeprefix(PREFIX)
        if not path.startswith(PREFIX) or route not in _ROUTES:
            return refuse(404, "route", f"{path!r} is not a route of wk-schedule/v1 "
                          f"({', '.join(_ROUTES)})")
        if sender not in ("actor", "operator"):
            return refuse(403, "forbidden", "schedules answer only actors and operators")
        if method not in _ROUTES[route].split():
            return refuse(405, "method", f"{route} takes {_ROUTES[route].replace(' ', ' or ')}")
        try:
            msg = json.loads(body) if body.strip() else {}
        except ValueError as e:
            return refuse(400, "bad-request", f"the body is not JSON: {e}")
        if route == "create":
            return self._create(msg, row)
        if row is None:
            return refuse(404, "unknown", f"no schedule {self.name()!r}")
        if not isinstance(msg, dict):
            return refuse(400, "bad-request", "the body must be a JSON object")
        return {"describe": self._describe, "pause": self._pause, "resume": self._resume,
                "delete": self._delete}[route](msg, row)

    def _create(self, msg: Any, row: Row | None) -> Reply:
        if row is not None:
            return reply({"error": "exists", "message": f"schedule {self.name()!r} exists "
                          "(delete it first to change it)", **self.describe(row)}, 409)
        try:
            spec = Spec.from_message(msg)
        except SpecError as e:
            return refuse(400, "bad-request", str(e))
        now = self.db.now()
        first = spec.parsed().next_after(now)
        if first is None:
            return refuse(400, "bad-request", f"cron {spec.cron!r} never fires")
        refusal = target.check(self.db, spec.target, fire.instance_id(self.name(), first))
        if refusal is not None:
            return refuse(*refusal)
        self.db.alarm_set(first)  # first: the durable insert syncs it too
        self.store.create(spec, now, first)
        created = self.store.row()
        assert created is not None
        return reply({**self.describe(created), "created": True})

    def _describe(self, msg: dict[str, Any], row: Row) -> Reply:
        limit = msg.get("fires", 20)
        if not isinstance(limit, int) or isinstance(limit, bool) or not 0 <= limit <= HISTORY:
            return refuse(400, "bad-request", f"fires {limit!r}: a number from 0 to {HISTORY}")
        return reply(self.describe(row, limit))

    def _pause(self, msg: dict[str, Any], row: Row) -> Reply:
        if not row.paused:
            self.db.alarm_clear()
            self.store.set_paused(True, self.db.now(), row.next_fire)
        return self._now_described()

    def _resume(self, msg: dict[str, Any], row: Row) -> Reply:
        if row.paused:
            now = self.db.now()
            nxt = row.spec.parsed().next_after(now)
            if nxt is not None:
                self.db.alarm_set(nxt)
            self.store.set_paused(False, now, nxt)
        return self._now_described()

    def _delete(self, msg: dict[str, Any], row: Row) -> Reply:
        self.db.delete_self()
        return reply({"name": self.name(), "deleted": True})

    def _now_described(self) -> Reply:
        row = self.store.row()
        if row is None:
            raise StoreFault("the schedule is not there after its write")
        return reply(self.describe(row))

    def describe(self, row: Row, fires: int = 20) -> dict[str, Any]:
        cron = row.spec.parsed()
        upcoming: list[int] = []
        t = row.next_fire
        while t is not None and len(upcoming) < NEXT_SHOWN and not row.paused:
            upcoming.append(t)
            t = cron.next_after(t)
        return {"name": self.name(), **row.spec.to_map(), "paused": row.paused,
                "created_at": row.created_at, "updated_at": row.updated_at,
                "next_fires": upcoming, "last_instance": row.last_instance,
                "started": row.started, "skipped": row.skipped, "missed": row.missed,
                "failed": row.failed,
                "fires": [f.to_map() for f in self.store.fires(fires)]}
