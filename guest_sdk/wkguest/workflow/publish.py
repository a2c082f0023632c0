"""What the instance publishes to the host's index, so that operators list without waking
it: its state and when it changed (being built: publishes nothing yet).

`Store` calls `Publisher.state` with every write of the instance's state, just before
the write itself, so that the attributes commit with it.
"""

from __future__ import annotations

from .backend import Backend


class Publisher:
    def __init__(self, db: Backend) -> None:
        self.db = db

    def state(self, state: str, updated_at: int) -> None:
        """The instance's state is about to be written as `state` at `updated_at`."""
