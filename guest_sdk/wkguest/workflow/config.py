"""How a workflow class behaves: retries, retention, budgets and limits."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TypedDict

if TYPE_CHECKING:
    from .tx import Tables

DAY_MS = 86_400_000


@dataclass(frozen=True)
class Retry:
    """A step's retry policy: `attempts` in all, the first retry `backoff_ms` after a
    failure, each next one `factor` times longer, never longer than `max_backoff_ms`."""

    attempts: int = 5
    backoff_ms: int = 1000
    factor: float = 2.0
    max_backoff_ms: int = 300_000

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError(f"attempts must be at least 1, got {self.attempts}")
        if self.backoff_ms < 0 or self.max_backoff_ms < 0:
            raise ValueError("backoff_ms and max_backoff_ms must be >= 0")
        if self.factor < 1:
            raise ValueError(f"factor must be at least 1, got {self.factor}")

    def backoff(self, attempt: int) -> int:
        """How long to wait after failed attempt number `attempt` (1-based)."""
        delay = self.backoff_ms * self.factor ** min(attempt - 1, 64)
        return int(min(delay, self.max_backoff_ms))

    def override(self, **opts: Any) -> Retry:
        """This policy with per-step options (attempts, backoff_ms, factor,
        max_backoff_ms). Raises TypeError for another name or a value of the wrong type,
        ValueError for a value out of range, each naming the option."""
        if not opts:
            return self
        unknown = set(opts) - set(_OPTION_TYPES)
        if unknown:
            raise TypeError(f"unknown step option(s) {', '.join(sorted(map(repr, unknown)))}"
                            f"; the options are {', '.join(_OPTION_TYPES)}")
        for name, value in opts.items():
            kinds, what = _OPTION_TYPES[name]
            if isinstance(value, bool) or not isinstance(value, kinds):
                raise TypeError(f"step option {name!r} must be {what}, not {value!r} "
                                f"({type(value).__name__})")
        try:
            return replace(self, **opts)
        except ValueError as e:
            raise ValueError(f"step option {e}") from None


# Each step option: the types it takes, and how the error message says so.
_OPTION_TYPES: dict[str, tuple[tuple[type, ...], str]] = {
    "attempts": ((int,), "a whole number of attempts"),
    "backoff_ms": ((int,), "a whole number of milliseconds"),
    "factor": ((int, float), "a number"),
    "max_backoff_ms": ((int,), "a whole number of milliseconds"),
}


class StepOptions(TypedDict, total=False):
    """Per-step options: the retry options (see `Retry`), any of them, the others from
    the Config; and `tx` (True or a `Tables`, not with step_keyed): the step's function
    gets a database handle, and its writes commit with the step's result (tx.py)."""

    attempts: int
    backoff_ms: int
    factor: float
    max_backoff_ms: int
    tx: bool | Tables
    compensate: Any  # the step's compensation (saga.py): run if the workflow fails


@dataclass(frozen=True)
class Config:
    """A workflow class's settings (`workflow.serve(fn, Config(...))`).

    attempts, backoff_ms, factor, max_backoff_ms: the default retry policy of every step
        (each step may override it), and of runs that end without the function returning
        (a trap outside any step, a replay over the CPU budget): those fail the instance
        after 2 × attempts in a row.
    retention_ms: how long a finished instance keeps its status before it deletes itself.
    run_budget_ms: how long one event may spend running new steps before it continues in
        a new event (host clock; it always runs at least one step). Keep it under the
        host's wall-clock budget per event (30 s by default).
    max_events: how many received events an instance keeps that no wait has taken yet;
        send_event past it is refused (429).
    max_value_bytes: the limit on each encoded step result, input, event payload and
        output (1 MiB).
    """

    attempts: int = 5
    backoff_ms: int = 1000
    factor: float = 2.0
    max_backoff_ms: int = 300_000
    retention_ms: int = 7 * DAY_MS
    run_budget_ms: int = 20_000
    max_events: int = 1000
    max_value_bytes: int = 1 << 20

    def __post_init__(self) -> None:
        self.retry  # noqa: B018  # validates the retry fields now, not at the first step
        if self.retention_ms < 0 or self.run_budget_ms < 0:
            raise ValueError("retention_ms and run_budget_ms must be >= 0")
        if self.max_events < 1 or self.max_value_bytes < 16:
            raise ValueError("max_events must be >= 1 and max_value_bytes >= 16")

    @property
    def retry(self) -> Retry:
        """The default retry policy of steps (and of failed runs)."""
        return Retry(self.attempts, self.backoff_ms, self.factor, self.max_backoff_ms)

    @property
    def max_bad_runs(self) -> int:
        """Runs in a row that may end without the function returning before it fails."""
        return 2 * self.attempts
