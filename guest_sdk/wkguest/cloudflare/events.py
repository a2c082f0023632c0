"""What `run()` reads of its instance: `WorkflowEvent`, and the event a wait took.

`WorkflowEvent` is lazy: `payload` is the run's input, and `instance_id` and `timestamp`
are asked of the instance only when read (then kept for the run). Both are fixed for the
instance's life, so every replay sees the same values without recording them.
"""

from __future__ import annotations

import datetime
from typing import Any

from wkguest.workflow import Run, extend

EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def to_datetime(ms: int) -> datetime.datetime:
    """Ms since the Unix epoch as a timezone-aware UTC datetime (exact)."""
    return EPOCH + datetime.timedelta(milliseconds=ms)


class WorkflowEvent:
    """`run(event, step)`'s event: `payload` (the params given to create), `instance_id`,
    `timestamp` (when the instance was created, a UTC datetime) and `timestamp_ms`."""

    __slots__ = ("_created", "_id", "_wf", "payload")

    def __init__(self, wf: Run, payload: Any) -> None:
        self._wf = wf
        self.payload = payload
        self._id: str | None = None
        self._created: int | None = None

    @property
    def instance_id(self) -> str:
        if self._id is None:
            self._id = extend.instance_id(self._wf)
        return self._id

    @property
    def timestamp_ms(self) -> int:
        """When the instance was created (host clock, ms since the Unix epoch)."""
        if self._created is None:
            self._created = extend.created_at(self._wf)
        return self._created

    @property
    def timestamp(self) -> datetime.datetime:
        return to_datetime(self.timestamp_ms)

    def __repr__(self) -> str:
        return f"WorkflowEvent(payload={self.payload!r})"


class ReceivedEvent:
    """What `step.wait_for_event` returns: the event's `payload`, its `type`, and its
    `timestamp` (None: the runner does not keep when an event was sent)."""

    __slots__ = ("payload", "timestamp", "type")

    def __init__(self, payload: Any, type: str,
                 timestamp: datetime.datetime | None = None) -> None:
        self.payload = payload
        self.type = type
        self.timestamp = timestamp

    def __repr__(self) -> str:
        return f"ReceivedEvent(type={self.type!r}, payload={self.payload!r})"


__all__ = ["ReceivedEvent", "WorkflowEvent", "to_datetime"]
