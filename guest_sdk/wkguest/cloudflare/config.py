"""A step's config, Cloudflare's shape, translated into `wf.step`'s options.

    {"retries": {"limit": 3, "delay": "10 seconds", "backoff": "exponential"},
     "timeout": "5 minutes"}

becomes `limit=3, delay="10 seconds", backoff="exponential", timeout="5 minutes"`.
Defaults as Cloudflare's: limit 5 (retries after the first attempt), delay "10 seconds",
backoff "exponential"; but no timeout by default (Cloudflare's is 10 minutes): an attempt
is bounded by the event's budget anyway (30 s by default). Exponential multiplies the
delay by the Config's `factor` (2) per attempt, capped by its `max_backoff_ms` (5 minutes
by default), never below the delay itself. A `delay` may be a function `delay(ctx,
error)` (Cloudflare's dynamic delay), which gets this package's step context.

Unknown keys fail at once, naming them (CodeError: the instance parks, as for any mistake
in the code); a bad value fails in `wf.step`, naming its option.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from wkguest.workflow.errors import CodeError

from .context import StepContext

RETRY_DEFAULTS: dict[str, Any] = {"limit": 5, "delay": "10 seconds", "backoff": "exponential"}
KEYS = ("retries", "timeout")
RETRY_KEYS = ("limit", "delay", "backoff")

# Makes the context a delay function gets, from the runner's StepContext.
ContextOf = Callable[[Any], StepContext]


def resolve(config: object, what: str) -> dict[str, Any]:
    """`config` (None or a dict) with the defaults applied: {"retries": {...}, "timeout":
    ... or None}. Raises CodeError naming a key or a shape that is not Cloudflare's."""
    if config is None:
        return {"retries": dict(RETRY_DEFAULTS), "timeout": None}
    if not isinstance(config, Mapping):
        raise CodeError(f"{what} must be a dict such as {{'retries': {{'limit': 3}}, "
                        f"'timeout': '1 minute'}}, not {config!r}")
    _known(config, KEYS, what)
    retries = config.get("retries")
    if retries is None:
        retries = {}
    elif not isinstance(retries, Mapping):
        raise CodeError(f"{what}: 'retries' must be a dict with limit, delay and/or "
                        f"backoff, not {retries!r}")
    _known(retries, RETRY_KEYS, f"{what}: 'retries'")
    return {"retries": {**RETRY_DEFAULTS, **retries}, "timeout": config.get("timeout")}


def step_options(resolved: dict[str, Any], context_of: ContextOf) -> dict[str, Any]:
    """`wf.step`'s retry and timeout options for a resolved config (see `resolve`)."""
    retries = resolved["retries"]
    delay = retries["delay"]
    opts: dict[str, Any] = {"limit": retries["limit"], "backoff": retries["backoff"],
                            "delay": _dynamic(delay, context_of) if callable(delay)
                            else delay}
    if resolved["timeout"] is not None:
        opts["timeout"] = resolved["timeout"]
    return opts


def _dynamic(delay: Callable[..., Any], context_of: ContextOf) -> Callable[[Any, Any], Any]:
    def runner_delay(ctx: Any, error: Any) -> Any:
        return delay(context_of(ctx), error)

    return runner_delay


def _known(given: Mapping[Any, Any], keys: tuple[str, ...], what: str) -> None:
    unknown = sorted(map(repr, set(given) - set(keys)))
    if unknown:
        raise CodeError(f"{what}: unknown key(s) {', '.join(unknown)}; the keys are "
                        f"{', '.join(keys)}")


__all__ = ["KEYS", "RETRY_DEFAULTS", "RETRY_KEYS", "resolve", "step_options"]
