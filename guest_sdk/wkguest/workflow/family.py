"""An instance's parent and children: the notices a finished child owes its parent, and
the cancels a cancelled parent owes its children.

(Being built: `finished` and `drain` are the runner's hooks.)
"""

from __future__ import annotations

from .backend import Backend
from .store import Store


class Family:
    def __init__(self, store: Store, db: Backend) -> None:
        self.store = store
        self.db = db

    def finished(self, state: str, output: str | None, tagged: bool, error: str | None,
                 now: int) -> int | None:
        """The instance has just finished as `state` (durably). Returns when its alarm
        must fire to deliver what it owes (a parent's notice, its children's cancels),
        or None if it owes nothing."""
        return None

    def drain(self, now: int) -> int | None:
        """Deliver what the finished instance owes. Returns when to try again, or None
        once nothing is owed."""
        return None
