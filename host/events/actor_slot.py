"""What the host keeps in memory for one actor between events."""

from __future__ import annotations

import errno
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

from ..engine.instance import Instance
from ..storage.actordb import ActorDb
from ..storage.host_rows import AlarmRow
from ..traps import TrapReason
from ..types import ActorRef

# Without the output pipe (engine/guest_output.py), every write is a call into the host:
# writes past the cap are dropped quietly this many times, then fail with EIO, so that
# a flood costs the guest its own handling of the error, as past the pipe it does.
DROPPED_WRITES_BEFORE_EIO = 256


class GuestOutput:
    """The guest's stdout and stderr of the current event, capped.

    Bound to the actor, not looked up from the thread: without the pipe, wasmtime calls
    the output callback from one of its own threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.chunks: list[bytes] = []
        self.size = 0
        self.dropped = 0
        self.dropped_writes = 0
        self.past_cap = False

    def write(self, data: bytes, cap: int, past_cap: bool = False) -> int | None:
        """Keep what fits under `cap`. None: the write succeeded, for the guest; a
        negative errno: it failed (past DROPPED_WRITES_BEFORE_EIO dropped writes).
        `past_cap`: what the pipe held after a call, in which the guest wrote past the
        cap, where its writes fail."""
        if sys.is_finalizing():
            return None
        with self._lock:
            room = max(0, cap - self.size)
            self.past_cap = self.past_cap or past_cap
            if room < len(data) and not past_cap:
                self.dropped_writes += 1
                if self.dropped_writes > DROPPED_WRITES_BEFORE_EIO:
                    self.dropped += len(data)
                    return -errno.EIO
            self.chunks.append(data[:room])
            self.size += min(room, len(data))
            self.dropped += max(0, len(data) - room)
        return None

    def charge(self, size: int, cap: int) -> bool:
        """A log record of `size` bytes (interfaces/log.py) takes its room under `cap`,
        as a write would: False, and counted as dropped, if it does not fit."""
        with self._lock:
            if self.size + size > cap:
                self.dropped += size
                return False
            self.size += size
        return True

    @property
    def flooded(self) -> bool:
        """Its writes went past the point where they fail."""
        return self.past_cap or self.dropped_writes > DROPPED_WRITES_BEFORE_EIO

    def take(self) -> tuple[str, int, bool]:
        """The event's output, the bytes dropped, and whether writes failed."""
        with self._lock:
            text = b"".join(self.chunks).decode("utf-8", "replace")
            dropped, flooded = self.dropped, self.flooded
            self.chunks, self.size, self.dropped, self.dropped_writes = [], 0, 0, 0
            self.past_cap = False
        return text, dropped, flooded


@dataclass(eq=False)
class ActorSlot:
    ref: ActorRef
    path: Path
    lock: threading.Lock = field(default_factory=threading.Lock)
    waiting: int = 0                     # events queued on the lock (backpressure)
    db: ActorDb | None = None
    instance: Instance | None = None
    initialized: bool | None = None      # None: not read from the db yet
    alarm_seen: AlarmRow | None = None   # the row as last synced (events/alarms.py)
    attrs_seen: str | None = None        # the published attributes as last indexed
    last_used: float = 0.0
    last_request: float = 0.0            # when someone last asked it something
    # Asleep (see events/settle.py) but kept warm a little while, as someone asked it
    # something just before: the idle sweep drops it after followed_s, not idle_instance_s.
    sleepy: bool = False
    output: GuestOutput = field(default_factory=lambda: GuestOutput())
    # Why its last trapped event ended, as kept in its database (events/settle.py's keep_trap).
    last_trap: TrapReason | None = None
    place: int = 0  # its place in --max-actors: runtime/admission.py's NO_PLACE, HELD or KEPT

    def require_db(self) -> ActorDb:
        if self.db is None:
            raise RuntimeError(f"{self.ref} has no open database outside an event")
        return self.db

    def close(self) -> Instance | None:
        """Let go of the instance, returned to the caller, and close the db (the caller
        holds the lock)."""
        inst, self.instance = self.instance, None
        if self.db is not None:
            self.db.close()
            self.db = None
        self.initialized = None
        self.alarm_seen = None
        self.attrs_seen = None
        self.last_trap = None
        return inst
