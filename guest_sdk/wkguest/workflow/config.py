"""How a workflow class behaves: retries, retention, budgets and limits."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict

from ..durations import Duration, to_ms

if TYPE_CHECKING:
    from .context import StepContext
    from .tx import Tables

DAY_MS = 86_400_000
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
    for none. Step options (policy.py) make one from the Config's."""

    attempts: int = 5
    backoff_ms: int = 1000
    factor: float = 2.0
    max_backoff_ms: int = 300_000
    backoff_kind: str = EXPONENTIAL
    delay_fn: Callable[[StepContext, Exception], Duration] | None = None
    timeout_ms: int | None = None

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

    def override(self, **opts: Any) -> Retry:
        """This policy with per-step options (policy.OPTIONS). Raises TypeError for
        another name or a value of the wrong type, ValueError for a value out of range,
        each naming the option."""
        if not opts:
            return self
        from .policy import override  # policy.py builds on Retry: imported when used

        return override(self, opts)


class StepOptions(TypedDict, total=False):
    """Per-step options: the retry options (policy.OPTIONS), any of them, the others from
    the Config; and `tx` (True or a `Tables`, not with step_keyed): the step's function
    gets a database handle, and its writes commit with the step's result (tx.py)."""

    attempts: int
    limit: int
    backoff_ms: int
    delay: Delay
    backoff: str
    factor: float
    max_backoff_ms: int
    timeout: Duration | None
    timeout_ms: int | None
    tx: bool | Tables
    compensate: Any  # the step's compensation (saga.py): run if the workflow fails


_DEFAULT_ATTEMPTS, _DEFAULT_BACKOFF_MS, _DEFAULT_RETENTION_MS = 5, 1000, 7 * DAY_MS


@dataclass(frozen=True)
class Config:
    """A workflow class's settings (`workflow.serve(fn, Config(...))`).

    attempts (or limit, the retries after the first: attempts = limit + 1), backoff_ms
        (or delay: a duration, or a function of the attempt's context and error),
        backoff ("constant", "linear", "exponential"), factor, max_backoff_ms, and timeout
        (each attempt's, a duration; None: the event's budget bounds it): the default
        retry policy of every step (each step may override it), and of runs that end
        without the function returning (a trap outside any step, a replay over the CPU
        budget): those fail the instance after 2 × attempts in a row.
    retention_ms (or retention, a duration): how long a finished instance keeps its
        status before it deletes itself.
    run_budget_ms: how long one event may spend running new steps before it continues in
        a new event (host clock; it always runs at least one step). Keep it under the
        host's wall-clock budget per event (30 s by default).
    max_events: how many received events an instance keeps that no wait has taken yet;
        send_event past it is refused (429).
    max_value_bytes: the limit on each encoded step result, input, event payload and
        output (1 MiB).

    A duration is an int of milliseconds, a timedelta, or a string such as "10 seconds"
    or "10s" (wkguest.durations). Giving both names of one setting (limit and attempts,
    delay and backoff_ms, retention and retention_ms) is an error.
    """

    attempts: int = _DEFAULT_ATTEMPTS
    backoff_ms: int = _DEFAULT_BACKOFF_MS
    factor: float = 2.0
    max_backoff_ms: int = 300_000
    retention_ms: int = _DEFAULT_RETENTION_MS
    run_budget_ms: int = 20_000
    max_events: int = 1000
    max_value_bytes: int = 1 << 20
    limit: int | None = None
    delay: Delay | None = None
    backoff: str = EXPONENTIAL
    timeout: Duration | None = None
    retention: Duration | None = None
    _retry: Retry = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        retry = _config_retry(self)  # validates the retry fields now, not at the first step
        # The effective values in the int fields too, which the runner and tools read.
        object.__setattr__(self, "_retry", retry)
        object.__setattr__(self, "attempts", retry.attempts)
        object.__setattr__(self, "backoff_ms", retry.backoff_ms)
        if self.retention is not None:
            ms = to_ms(self.retention, "Config retention")
            _one_of(self.retention_ms, ms, _DEFAULT_RETENTION_MS, "retention", "retention_ms")
            object.__setattr__(self, "retention_ms", ms)
        if self.retention_ms < 0 or self.run_budget_ms < 0:
            raise ValueError("retention_ms and run_budget_ms must be >= 0")
        if self.max_events < 1 or self.max_value_bytes < 16:
            raise ValueError("max_events must be >= 1 and max_value_bytes >= 16")

    @property
    def retry(self) -> Retry:
        """The default retry policy of steps (and of failed runs)."""
        return self._retry

    @property
    def max_bad_runs(self) -> int:
        """Runs in a row that may end without the function returning before it fails."""
        return 2 * self.attempts


def _config_retry(c: Config) -> Retry:
    base = Retry(c.attempts, c.backoff_ms, c.factor, c.max_backoff_ms)
    opts: dict[str, Any] = {"backoff": c.backoff}
    if c.limit is not None:
        opts["limit"] = c.limit
    if c.delay is not None:
        opts["delay"] = c.delay
    if c.timeout is not None:
        opts["timeout"] = c.timeout
    try:
        retry = base.override(**opts)
    except (TypeError, ValueError) as e:
        raise type(e)(str(e).replace("step option", "Config", 1)) from None
    # A replace() of a Config carries the effective values over: only a different one clashes.
    if c.limit is not None:
        _one_of(c.attempts, retry.attempts, _DEFAULT_ATTEMPTS, "limit", "attempts")
    if c.delay is not None:
        derived = _DEFAULT_BACKOFF_MS if callable(c.delay) else retry.backoff_ms
        _one_of(c.backoff_ms, derived, _DEFAULT_BACKOFF_MS, "delay", "backoff_ms")
    return retry


def _one_of(given: int, derived: int, default: int, name: str, ms_name: str) -> None:
    if given not in (default, derived):
        raise ValueError(f"Config takes {name} or {ms_name}, not both ({ms_name}={given})")
