"""A new actor's database made from its class's schema image (storage/images.py): the
script the image stands for, taken as run until the guest's first statement shows
whether it is the same.

If it is, the script is not run again. If it is anything else (or on-init runs no SQL),
the database is made the plain template again before that statement runs, and the
host's own first writes, kept here, are made again (ActorDb's `_abandon_speculation`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class Speculation:
    """The image's script, until the guest's first statement, and the host's writes
    made meanwhile (what a failed speculation replays on the plain template)."""

    def __init__(self, script: str) -> None:
        self.script = script
        self.host_writes: list[tuple[str, Sequence[Any]]] = []

    def taken(self, sql: str, params: Sequence[Any]) -> bool:
        """The guest's first statement is the image's script: the database already is
        what it makes of the template."""
        return sql == self.script and not params
