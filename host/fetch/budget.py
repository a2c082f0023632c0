"""The fetch's time budget.

min(req.timeout_ms or policy.default_timeout_ms, the event's deadline - now) covers the
whole fetch: DNS, connect, TLS, sending, the response head and body, and every redirect.
Each socket operation gets the time left, and the time left is checked before each read,
so a server that trickles bytes cannot stretch a fetch past its budget. A budget that is
already spent fails at once.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from .errors import FetchError


@dataclass(frozen=True)
class Clock:
    stop: float  # time.monotonic() at which the fetch gives up
    budget_ms: int
    by_deadline: bool  # the event's deadline, not the request's timeout, is the limit

    @staticmethod
    def start(timeout_ms: int | None, default_ms: int, deadline: float) -> Clock:
        if timeout_ms is not None and timeout_ms < 0:
            raise FetchError("invalid", f"timeout-ms {timeout_ms} is negative")
        now = time.monotonic()
        requested = (timeout_ms or default_ms) / 1000
        left = deadline - now
        budget = min(requested, left)
        return Clock(now + budget, max(0, round(budget * 1000)), left < requested)

    def left(self, what: str) -> float:
        """Seconds left, or the timeout error if there are none."""
        left = self.stop - time.monotonic()
        if left <= 0:
            raise self.expired(what)
        return left

    def expired(self, what: str) -> FetchError:
        if self.by_deadline:
            return FetchError("timeout", f"the event's time ran out while {what}")
        return FetchError("timeout", f"the {self.budget_ms} ms timeout passed while {what}")
