"""How a workflow class behaves: retries, retention, budgets and limits."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict

from ...durations import Duration, to_ms
from .policy import override
from .retry import BACKOFFS, CONSTANT, EXPONENTIAL, LINEAR, Delay, Retry

if TYPE_CHECKING:
    from .tx import Tables

__all__ = ["BACKOFFS", "CONSTANT", "DAY_MS", "EXPONENTIAL", "LINEAR", "Config", "Delay",
           "Retry", "StepOptions"]

DAY_MS = 86_400_000


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
    idempotency_keys: bool | list[str]
    retry_on: type[Exception] | tuple[type[Exception], ...]
    no_retry_on: type[Exception] | tuple[type[Exception], ...]
    tx: bool | Tables
    compensate: Any  # the step's compensation (saga/compensations.py): run if the workflow fails


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
        retry = override(base, opts)
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
