"""`wkhost audit` (being built)."""

from __future__ import annotations

from typing import Any


def add_audit(sub: Any) -> None:
    """Register `wkhost audit` (not yet: nothing is registered)."""
