"""A step's retry policy, `Retry`: how many attempts, and the wait after each failed one.

Step options (policy.py) and the Config (config.py) make one; this module only holds it
and does its arithmetic, so that both can build on it without importing each other.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...durations import Duration
from ...idempotency import UNSAFE_METHODS

if TYPE_CHECKING:
    from .context import StepContext

# The backoff kinds: how the wait after a failed attempt grows with its number.
CONSTANT, LINEAR, EXPONENTIAL = "constant", "linear", "exponential"
BACKOFFS = (CONSTANT, LINEAR, EXPONENTIAL)
# A delay: a duration, or Cloudflare's dynamic delay, `delay(ctx, error)` returning one.
Delay = Duration | Callable[["StepContext", Exception], Duration]


@dataclass(frozen=True)
class Retry:
    """A step's retry policy: `attempts` in all; after failed attempt n, a wait of the base
    delay `backoff_ms` grown by `backoff_kind` ("constant": the base; "linear": base × n;
    "exponential": base × factor^(n-1)), never longer than `max_backoff_ms` unless the
    base itself is. `delay_fn(ctx, error)`, if set, gives the base delay after each failed
    attempt instead (policy.py). `timeout_ms`: each attempt's timeout (timeouts.py), None
    for none. `key_methods`: the methods of the fetches that carry an idempotency key
    (none: no key). `retry_on`, `no_retry_on`: the exception types retried, and not.
    Step options (policy.py) make one from the Config's."""

    attempts: int = 5
    backoff_ms: int = 1000
    factor: float = 2.0
    max_backoff_ms: int = 300_000
    backoff_kind: str = EXPONENTIAL
    delay_fn: Callable[[StepContext, Exception], Duration] | None = None
    timeout_ms: int | None = None
    # The methods whose fetches in a step carry an idempotency key (wkguest/idempotency.py)
    key_methods: frozenset[str] = UNSAFE_METHODS
    # Retries by failure type (policy.py's `not_retried`): only these are retried (None:
    # any), and never these.
    retry_on: tuple[type[Exception], ...] | None = None
    no_retry_on: tuple[type[Exception], ...] = ()

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError(f"attempts must be at least 1, got {self.attempts}")
        if self.backoff_ms < 0 or self.max_backoff_ms < 0:
            raise ValueError("backoff_ms and max_backoff_ms must be >= 0")
        if self.factor < 1:
            raise ValueError(f"factor must be at least 1, got {self.factor}")
        if self.backoff_kind not in BACKOFFS:
            raise ValueError(f"backoff must be one of {', '.join(map(repr, BACKOFFS))}, "
                             f"not {self.backoff_kind!r}")
        if self.timeout_ms is not None and self.timeout_ms <= 0:
            raise ValueError(f"timeout must be more than 0 ms, got {self.timeout_ms}")

    def backoff(self, attempt: int, base: int | None = None) -> int:
        """How long to wait after failed attempt number `attempt` (1-based), from the
        base delay `base` (default: backoff_ms)."""
        b = self.backoff_ms if base is None else base
        cap = max(self.max_backoff_ms, b)  # a long base delay is meant: never cut below it
        if self.backoff_kind == CONSTANT:
            return b
        if self.backoff_kind == LINEAR:
            return min(b * attempt, cap)
        try:
            grown = b * self.factor ** min(attempt - 1, 64)
        except OverflowError:
            return cap
        return int(min(grown, cap))
