"""How the CLI writes times."""

from __future__ import annotations

import time


def when(ms: int) -> str:
    """A host-clock time (ms since the Unix epoch) as UTC text, to the millisecond."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(ms / 1000)) + f".{ms % 1000:03d}Z"
