"""What the instance publishes to the host's index, so that operators list it without
waking it (WIT `attributes`): its state, and when that state began.

`Store` calls `Publisher.state` with every write of the instance's state, just before
the write itself; the host commits what is published with the next write, so the state
listed is the state written. Most writes leave the state as it was (a waiting instance's
every run ends "waiting"): only a change is published, so an event that changes no state
costs no host call. The Publisher knows what it published itself: a new instance (a fresh
instance of the guest, after a restart or a sleep) publishes its first state write again.
"""

from __future__ import annotations

from ..backend import Backend


class Publisher:
    def __init__(self, db: Backend) -> None:
        self.db = db
        self._published: str | None = None  # the state this Publisher last published

    def state(self, state: str, updated_at: int) -> None:
        """The instance's state is about to be written as `state` at `updated_at`."""
        if state == self._published:
            return
        self.db.publish(state, updated_at)
        self._published = state
