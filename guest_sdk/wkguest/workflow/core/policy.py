"""Step options into a retry policy, and the wait after a failed attempt.

    wf.step("fetch", fetch, limit=3, delay="10 seconds", backoff="linear", timeout="1 minute")
    wf.step("call", call, delay=lambda ctx, error: "1 minute" if is_throttled(error) else 0)

The options (OPTIONS) of wf.step, step_keyed, try_step, a `Step` branch and a
`Compensation`, each over the Config's defaults:

    attempts / limit      attempts in all, or the retries after the first (Cloudflare's
                          `limit`: attempts = limit + 1); not both
    backoff_ms / delay    the base delay: an int of ms, or any duration ("10s", "5 minutes",
                          a timedelta), or a function `delay(ctx, error)` returning one,
                          called after each failed attempt (Cloudflare's dynamic delay);
                          not both
    backoff               how the wait grows with the attempt: "constant", "linear" or
                          "exponential" (by `factor`), capped by max_backoff_ms (config.py)
    timeout / timeout_ms  each attempt's timeout, a duration or an int of ms; None: none
                          (timeouts.py); not both
    retry_on              the exception types an attempt may raise and be retried (a
                          class or a tuple of them; a subclass matches): any other
                          fails the step for good, as NonRetryable does; a timed-out
                          attempt is retried all the same
    no_retry_on           the exception types that fail the step for good at once (a
                          timed-out attempt is a StepTimedOut, a TimeoutError)
    idempotency_keys      which of the step's fetches carry an Idempotency-Key, the same
                          in every attempt (wkguest/idempotency.py): True (the default:
                          POST, PUT, PATCH and DELETE), False (none), or a list of
                          methods

Every bad option raises at once naming it (the cursor's step, core/cursor.py, makes that
a CodeError). A delay function that raises or returns no duration fails the step for
good (DelayFailed).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ...durations import to_ms
from ...idempotency import UNSAFE_METHODS
from .timeouts import StepTimedOut

if TYPE_CHECKING:
    from .context import StepContext
    from .retry import Retry

OPTIONS = ("attempts", "limit", "backoff_ms", "delay", "backoff", "factor", "max_backoff_ms",
           "timeout", "timeout_ms", "idempotency_keys", "retry_on", "no_retry_on")
# Two names for one setting: giving both is an error.
_PAIRS = (("limit", "attempts"), ("delay", "backoff_ms"), ("timeout", "timeout_ms"))
_MS = "a whole number of milliseconds (an int)"


class DelayFailed(Exception):
    """A step's delay function raised or returned something that is not a duration."""


def override(base: Retry, opts: dict[str, Any]) -> Retry:
    """`base` with the step options `opts`. Raises TypeError (an unknown option, a wrong
    type) or ValueError (a value out of range, two names of one setting), naming it."""
    if not opts:
        return base  # most steps: a new Retry, checked again, would be `base` again
    unknown = set(opts) - set(OPTIONS)
    if unknown:
        raise TypeError(f"unknown step option(s) {', '.join(sorted(map(repr, unknown)))}"
                        f"; the options are {', '.join(OPTIONS)}")
    for a, b in _PAIRS:
        if a in opts and b in opts:
            raise ValueError(f"step options {a!r} and {b!r} are one setting: give one")
    changes: dict[str, Any] = {}
    for name, value in opts.items():
        changes.update(_PARSE[name](name, value))
    try:
        return replace(base, **changes)
    except ValueError as e:
        raise ValueError(f"step option {e}") from None


def _int(name: str, value: object, what: str, hint: str = "") -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"step option {name!r} must be {what}, not {value!r} "
                        f"({type(value).__name__}){hint}")
    return value


def _attempts(name: str, value: object) -> dict[str, Any]:
    return {"attempts": _int(name, value, "a whole number of attempts")}


def _limit(name: str, value: object) -> dict[str, Any]:
    n = _int(name, value, "a whole number of retries")
    if n < 0:
        raise ValueError(f"step option 'limit' must be 0 or more retries, got {n}")
    return {"attempts": n + 1}


def _backoff_ms(name: str, value: object) -> dict[str, Any]:
    hint = f"; for a duration such as {value!r} use delay={value!r}" if isinstance(
        value, str) else ""
    return {"backoff_ms": _int(name, value, _MS, hint), "delay_fn": None}


def _max_backoff_ms(name: str, value: object) -> dict[str, Any]:
    return {"max_backoff_ms": _int(name, value, _MS)}


def _factor(name: str, value: object) -> dict[str, Any]:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"step option {name!r} must be a number, not {value!r} "
                        f"({type(value).__name__})")
    return {"factor": value}


def _delay(name: str, value: object) -> dict[str, Any]:
    if callable(value):
        return {"delay_fn": value}
    return {"backoff_ms": to_ms(value, "step option 'delay'"), "delay_fn": None}


def _backoff(name: str, value: object) -> dict[str, Any]:
    if not isinstance(value, str):
        raise TypeError(f"step option 'backoff' must be \"constant\", \"linear\" or "
                        f"\"exponential\", not {value!r} ({type(value).__name__}); the "
                        "base delay is delay= or backoff_ms=")
    return {"backoff_kind": value}


def _timeout(name: str, value: object) -> dict[str, Any]:
    return {"timeout_ms": None if value is None else to_ms(value, "step option 'timeout'")}


def _timeout_ms(name: str, value: object) -> dict[str, Any]:
    hint = f"; for a duration such as {value!r} use timeout={value!r}" if isinstance(
        value, str) else ""
    return {"timeout_ms": None if value is None else _int(name, value, _MS, hint)}


def _idempotency_keys(name: str, value: object) -> dict[str, Any]:
    if value is True:
        return {"key_methods": UNSAFE_METHODS}
    if value is False or value is None:
        return {"key_methods": frozenset()}
    if isinstance(value, (list, tuple, set, frozenset)) and all(
            isinstance(m, str) and m for m in value):
        return {"key_methods": frozenset(m.upper() for m in value)}
    raise TypeError(f"step option {name!r} must be True, False or a list of HTTP methods, "
                    f"not {value!r}")


def _types(name: str, value: object) -> dict[str, Any]:
    types = value if isinstance(value, (tuple, list)) else (value,)
    for t in types:
        if not (isinstance(t, type) and issubclass(t, Exception)):
            raise TypeError(f"step option {name!r} takes an exception class or a tuple of "
                            f"them, not {t!r}")
    return {name: tuple(types)}


_PARSE: dict[str, Callable[[str, object], dict[str, Any]]] = {
    "attempts": _attempts, "limit": _limit, "backoff_ms": _backoff_ms, "delay": _delay,
    "backoff": _backoff, "factor": _factor, "max_backoff_ms": _max_backoff_ms,
    "timeout": _timeout, "timeout_ms": _timeout_ms, "idempotency_keys": _idempotency_keys,
    "retry_on": _types, "no_retry_on": _types,
}


def wait_after(retry: Retry, attempt: int, ctx: StepContext | None,
               error: Exception) -> int:
    """How long to wait after failed attempt `attempt` (which raised `error`): the base
    delay (the delay function's answer, if the policy has one), grown by the backoff
    kind. Raises DelayFailed if the delay function raises or answers no duration."""
    fn = retry.delay_fn
    if fn is None or ctx is None:
        return retry.backoff(attempt)
    try:
        got = fn(ctx, error)
    except Exception as e:
        raise DelayFailed(f"the step's delay function raised {_describe(e)}") from None
    try:
        base = to_ms(got, "the step's delay function's answer")
    except (TypeError, ValueError) as e:
        raise DelayFailed(f"{e}") from None
    return retry.backoff(attempt, base)


def not_retried(retry: Retry, error: Exception) -> str | None:
    """Why the step's failure types (`retry_on`, `no_retry_on`) do not retry an attempt
    that raised `error` (a StepTimedOut for one that timed out), or None."""
    if retry.no_retry_on and isinstance(error, retry.no_retry_on):
        return f"{type(error).__name__} is in the step's no_retry_on"
    if retry.retry_on is not None and not isinstance(error, (*retry.retry_on, StepTimedOut)):
        return f"{type(error).__name__} is not in the step's retry_on"
    return None


def delay_failed(reason: DelayFailed, attempt: int, error: str) -> str:
    """The step's final error when its delay function failed after attempt `attempt`."""
    return (f"{reason}; so the step failed with no more retries (attempt {attempt}: "
            f"{error})")


def _describe(e: BaseException) -> str:
    msg = str(e)
    return f"{type(e).__name__}: {msg}" if msg else type(e).__name__


__all__ = ["OPTIONS", "DelayFailed", "delay_failed", "not_retried", "override", "wait_after"]
