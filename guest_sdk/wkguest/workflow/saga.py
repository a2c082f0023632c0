"""Saga compensation: a step's `compensate=`, run in reverse when the workflow fails.

(Being built: the runner's compensation phase lands with it.)
"""

from __future__ import annotations

from typing import Any


class Saga:
    """A mixin of `Run`: the compensations that the run's completed steps registered."""

    __slots__ = ()

    def _note_compensation(self, pos: int, name: str, opts: Any) -> None:
        """Step `name` at `pos` completed with options `opts`; keep its compensation."""
