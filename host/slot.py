"""What the host keeps in memory for one actor between events."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

from .alarms import AlarmRow
from .instance import Instance
from .sqlite import ActorDb
from .types import ActorRef


@dataclass(eq=False)
class ActorSlot:
    ref: ActorRef
    path: Path
    lock: threading.Lock = field(default_factory=threading.Lock)
    waiting: int = 0                     # events queued on the lock (backpressure)
    db: ActorDb | None = None
    instance: Instance | None = None
    initialized: bool | None = None      # None: not read from the db yet
    alarm_seen: AlarmRow | None = None   # the row as last synced to the index
    last_used: float = 0.0

    def require_db(self) -> ActorDb:
        if self.db is None:
            raise RuntimeError(f"{self.ref} has no open database outside an event")
        return self.db

    def close(self) -> None:
        """Drop the instance and close the db (the caller holds the lock)."""
        self.instance = None
        if self.db is not None:
            self.db.close()
            self.db = None
        self.initialized = None
        self.alarm_seen = None
