"""A schedule's tables, `_wk_sched*`, and every statement on them.

One row in `_wk_sched`: the definition (JSON), paused, the next fire time not yet
handled, the last instance a fire started, and counts. One row per fire time handled
in `_wk_sched_fire`, the newest HISTORY kept: `planned` until its fire is done, then
started, existed (the start found the instance there: a fire repeated after a crash),
skipped (overlap), missed (catch-up) or failed (the target refused it).

Statements are tagged /*wk:schedule-...*/ for the host's crash points
(host/testing/crashpoints.py): a plan commits with `wk:schedule-plan`, each fire's
outcome with `wk:schedule-fired`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..workflow.backend import Backend
from .spec import Spec

__all__ = ["HISTORY", "Fire", "Row", "Store"]

HISTORY = 100
PLANNED = "planned"

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS _wk_sched (
        one INTEGER PRIMARY KEY CHECK (one = 1),
        spec TEXT NOT NULL,
        paused INTEGER NOT NULL DEFAULT 0,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        next_fire INTEGER,
        last_instance TEXT,
        started INTEGER NOT NULL DEFAULT 0,
        skipped INTEGER NOT NULL DEFAULT 0,
        missed INTEGER NOT NULL DEFAULT 0,
        failed INTEGER NOT NULL DEFAULT 0)""",
    """CREATE TABLE IF NOT EXISTS _wk_sched_fire (
        fire_at INTEGER PRIMARY KEY,
        instance TEXT NOT NULL,
        outcome TEXT NOT NULL,
        decided_at INTEGER NOT NULL,
        done_at INTEGER,
        note TEXT)""",
)
_ROW = ("SELECT spec, paused, created_at, updated_at, next_fire, last_instance, started, "
        "skipped, missed, failed FROM _wk_sched WHERE one = 1")
_COUNTER = {"started": "started", "existed": "started", "skipped": "skipped",
            "failed": "failed"}


@dataclass
class Row:
    """The schedule's row in `_wk_sched`: its definition, state and counts."""

    spec: Spec
    paused: bool
    created_at: int
    updated_at: int
    next_fire: int | None
    last_instance: str | None
    started: int
    skipped: int
    missed: int
    failed: int


@dataclass(frozen=True)
class Fire:
    """One fire time handled, a row of `_wk_sched_fire`: the instance it started (or
    would have) and its outcome."""

    fire_at: int
    instance: str
    outcome: str
    decided_at: int
    done_at: int | None
    note: str | None

    def to_map(self) -> dict[str, Any]:
        return {"fire_at": self.fire_at, "instance": self.instance, "outcome": self.outcome,
                "decided_at": self.decided_at, "done_at": self.done_at, "note": self.note}


class Store:
    """The schedule's tables (see the module's doc): every statement on them."""

    def __init__(self, db: Backend) -> None:
        self.db = db

    def init_schema(self) -> None:
        self.db.exec("/*wk:schedule-schema*/ BEGIN; " + "; ".join(_SCHEMA) + "; COMMIT")

    def row(self) -> Row | None:
        got = self.db.query_row(_ROW)
        if got is None:
            return None
        spec = Spec(**json.loads(got[0]))
        return Row(spec, bool(got[1]), *got[2:])

    def create(self, spec: Spec, now: int, next_fire: int | None) -> bool:
        """Durably, with the alarm the caller set before: False if one exists."""
        return self.db.exec_durable(
            "/*wk:schedule-create*/ INSERT OR IGNORE INTO _wk_sched (one, spec, created_at, "
            "updated_at, next_fire) VALUES (1, ?, ?, ?, ?)",
            (json.dumps(spec.to_map()), now, now, next_fire)) == 1

    def set_paused(self, paused: bool, now: int, next_fire: int | None) -> None:
        self.db.exec_durable(
            "/*wk:schedule-pause*/ UPDATE _wk_sched SET paused = ?, updated_at = ?, "
            "next_fire = ? WHERE one = 1", (int(paused), now, next_fire))

    def planned(self) -> list[Fire]:
        """The fires planned and not yet done, oldest first."""
        return self._select("WHERE outcome = ? ORDER BY fire_at", (PLANNED,))

    def plan(self, starts: list[tuple[int, str]], missed: list[tuple[int, str]],
             missed_count: int, next_fire: int | None, now: int) -> None:
        """Record one fire's decisions in one durable transaction: the fire times to
        start (planned), those missed, and the next fire time to handle."""
        self.db.exec("BEGIN IMMEDIATE")
        for at, instance in starts:
            self._fire(at, instance, PLANNED, now, None)
        for at, instance in missed:
            self._fire(at, instance, "missed", now, now)
        self.db.exec("/*wk:schedule-plan*/ UPDATE _wk_sched SET next_fire = ?, "
                     "missed = missed + ?, updated_at = ? WHERE one = 1",
                     (next_fire, missed_count, now))
        self.db.exec_durable("/*wk:schedule-plan*/ COMMIT")

    def _fire(self, at: int, instance: str, outcome: str, now: int, done: int | None) -> None:
        self.db.exec("/*wk:schedule-plan*/ INSERT OR IGNORE INTO _wk_sched_fire (fire_at, "
                     "instance, outcome, decided_at, done_at) VALUES (?, ?, ?, ?, ?)",
                     (at, instance, outcome, now, done))

    def fired(self, fire: Fire, outcome: str, note: str | None, now: int) -> None:
        """A planned fire's outcome, durably, with the counts and the last instance."""
        started = outcome in ("started", "existed")
        self.db.exec("BEGIN IMMEDIATE")
        self.db.exec("/*wk:schedule-fired*/ UPDATE _wk_sched_fire SET outcome = ?, "
                     "done_at = ?, note = ? WHERE fire_at = ?",
                     (outcome, now, note, fire.fire_at))
        counter = _COUNTER[outcome]
        self.db.exec(f"/*wk:schedule-fired*/ UPDATE _wk_sched SET {counter} = {counter} + 1, "
                     "last_instance = CASE WHEN ? THEN ? ELSE last_instance END, "
                     "updated_at = ? WHERE one = 1", (int(started), fire.instance, now))
        self.db.exec_durable("/*wk:schedule-fired*/ COMMIT")

    def note(self, fire: Fire, note: str) -> None:
        """Why a planned fire is not done yet (its call failed: it is retried)."""
        self.db.exec("/*wk:schedule-note*/ UPDATE _wk_sched_fire SET note = ? WHERE "
                     "fire_at = ?", (note[:500], fire.fire_at))

    def trim(self) -> None:
        """Keep the newest HISTORY fires (a planned one is always kept). Durable: it
        syncs the alarm set before it too."""
        self.db.exec_durable(
            "/*wk:schedule-trim*/ DELETE FROM _wk_sched_fire WHERE outcome != ? AND fire_at "
            "< (SELECT fire_at FROM _wk_sched_fire ORDER BY fire_at DESC LIMIT 1 OFFSET ?)",
            (PLANNED, HISTORY - 1))

    def fires(self, limit: int) -> list[Fire]:
        """The newest `limit` fires, newest first."""
        return self._select("ORDER BY fire_at DESC LIMIT ?", (limit,))

    def _select(self, where: str, params: tuple[str | int, ...]) -> list[Fire]:
        packed = json.loads(self.db.query_packed(
            "SELECT fire_at, instance, outcome, decided_at, done_at, note FROM _wk_sched_fire "
            + where, params))
        return [Fire(*r) for r in packed[1:]]
