"""`wkhost schedule` (being built)."""

from __future__ import annotations

from typing import Any


def add_schedule(sub: Any) -> None:
    """Register `wkhost schedule` (not yet: nothing is registered)."""
