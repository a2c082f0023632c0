"""`WorkflowStep`: Cloudflare's `step` over a workflow `Run`.

    pages = step.do("count pages", lambda: count(event.payload["id"]))
    step.do("charge", {"retries": {"limit": 3}}, lambda ctx: charge(ctx.attempt),
            rollback=lambda ctx, output, error: refund(output))
    step.sleep("settle", "1 minute"); step.sleep_until("then", datetime(...))
    review = step.wait_for_event("review", type="reviewed", timeout="1 day")
    a, b = step.all([step.branch("quote a", quote_a), step.branch("quote b", quote_b)])

`do` is `wf.step` with the config translated (config.py) and a `rollback` as its
compensation: `rollback(ctx, output, error)` gets the original step's context, the step's
recorded result and the workflow's failure message (None for a terminate with rollback),
and runs with `rollback_config`'s retries and timeout (Cloudflare's defaults otherwise).
Sleeps are `wf.sleep`/`wf.sleep_until`; a wait is `wf.wait_for_event` of the event's
type (the journal names the wait by its type), and raises WorkflowTimeoutError when its
timeout passes first, as Cloudflare throws. `all` of `branch`es is `wf.all` of Steps:
TypeScript's `Promise.all` of `step.do`s, whose `async` functions overlap their waits.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any

from wkguest.durations import format_ms, to_ms
from wkguest.workflow import CodeError, Compensation, Run, Step, extend

from .config import resolve, step_options
from .context import StepContext, StepInfo, takes_context
from .errors import WorkflowTimeoutError
from .events import EPOCH, ReceivedEvent

DEFAULT_WAIT = "24 hours"


class Failure:
    """The run's failure, once an exception escaped `run()` (entrypoint.py): what the
    rollbacks get as `error`. Set again by every replay that reaches the failure."""

    __slots__ = ("error",)

    def __init__(self) -> None:
        self.error: str | None = None


class WorkflowStep:
    """`run(event, step)`'s step: `do`, `sleep`, `sleep_until` and `wait_for_event`, over
    the run's `Run` (see the module's doc)."""

    __slots__ = ("_counts", "_failure", "_wf")

    def __init__(self, wf: Run, failure: Failure) -> None:
        self._wf = wf
        self._failure = failure
        self._counts: dict[str, int] = {}

    def do(self, name: str, *args: Any, rollback: Callable[..., Any] | None = None,
           rollback_config: Any = None) -> Any:
        """`do(name, fn)` or `do(name, config, fn)`: run `fn` once and record its result
        (every replay returns the recorded one). `fn` gets the step context if it takes
        an argument. Raises StepFailed when its retries run out (or it raised
        NonRetryableError); uncaught, that fails the instance."""
        what = f"step.do({name!r})"
        f, opts, info, resolved = self._prepared(name, args, what)
        done: list[Any] = []  # the step's result and position, once it has one
        if rollback is not None:
            opts["compensate"] = self._compensation(info, resolved, rollback,
                                                    rollback_config, done, what)
        try:
            out = self._wf.step(name, f, **opts)
        except CodeError as e:  # a bad option's message names the call the user wrote
            extend.refuse(self._wf, str(e).replace("wf.step(", "step.do(", 1))
        done[:] = [out, self._wf.position - 1]
        return out

    def branch(self, name: str, *args: Any) -> Step:
        """A step of `all`, not run yet: `branch(name, fn)` or `branch(name, config, fn)`,
        as `do` takes them (no rollback: a branch has no compensation here)."""
        f, opts, _, _ = self._prepared(name, args, f"step.branch({name!r})")
        return Step(name, f, **opts)

    def all(self, branches: list[Step]) -> list[Any]:
        """What `Promise.all([step.do(...), ...])` is in TypeScript: the branches
        (`branch`) run together, and those whose function is `async` (awaiting
        wkguest.overlap's fetch and call) wait together; their results, in order.
        Raises the StepFailed of the first to fail for good."""
        try:
            return self._wf.all(branches)
        except CodeError as e:  # a bad option's message names the call the user wrote
            extend.refuse(self._wf, str(e).replace("wf.all", "step.all", 1))

    def sleep(self, name: str, duration: Any) -> None:
        """Wait `duration` ("1 minute", ms, a timedelta), from when it is first reached."""
        self._wf.sleep(name, _ms(duration, f"step.sleep({name!r})"))

    def sleep_until(self, name: str, when: datetime.datetime | int) -> None:
        """Wait until `when`: a timezone-aware datetime, or ms since the Unix epoch."""
        what = f"step.sleep_until({name!r})"
        if isinstance(when, datetime.datetime):
            if when.tzinfo is None:
                raise CodeError(f"{what}: a naive datetime has no time zone; give one "
                                "with tzinfo (e.g. datetime.UTC)")
            at = (when - EPOCH) // datetime.timedelta(milliseconds=1)
        elif isinstance(when, int) and not isinstance(when, bool):
            at = when
        else:
            raise CodeError(f"{what}: when must be a datetime or ms since the epoch, not "
                            f"{when!r}")
        self._wf.sleep_until(name, max(at, 0))

    def wait_for_event(self, name: str, *, type: str, timeout: Any = DEFAULT_WAIT
                       ) -> ReceivedEvent:
        """The oldest event of `type` not taken by an earlier wait (sent before this
        wait or after). Raises WorkflowTimeoutError once `timeout` has passed first."""
        what = f"step.wait_for_event({name!r})"
        if not isinstance(type, str):
            raise CodeError(f"{what}: type must be a str, not {type!r}")
        ms = _ms(timeout, f"{what}: the timeout")
        pos = self._wf.position
        payload = self._wf.wait_for_event(type, ms)
        # None is also a payload: the journal's entry tells a timeout from an event.
        if payload is None and extend.state_at(self._wf, pos) == "timed-out":
            raise WorkflowTimeoutError(f"{what}: no event of type {type!r} came within "
                                       f"{format_ms(ms)}")
        return ReceivedEvent(payload, type)

    # -- machinery -----------------------------------------------------------------

    def _prepared(self, name: str, args: tuple[Any, ...], what: str
                  ) -> tuple[Callable[[], Any], dict[str, Any], StepInfo, dict[str, Any]]:
        """`do`'s and `branch`'s (name, [config,] fn): the function to run (given the
        step context if it takes one), its wf.step options, its info and config."""
        config, fn = _config_and_fn(args, what)
        count = self._counts[name] = self._counts.get(name, 0) + 1
        resolved = resolve(config, f"{what}: the config")
        info = StepInfo(name, count)
        opts = step_options(resolved, lambda sc: StepContext(info, resolved,
                                                             lambda: sc.attempt))
        if takes_context(fn, what):
            ctx = StepContext(info, resolved, self._attempt)
            return (lambda: fn(ctx)), opts, info, resolved
        return fn, opts, info, resolved

    def _attempt(self) -> int:
        return self._wf.step_context.attempt

    def _compensation(self, info: StepInfo, resolved: dict[str, Any],
                      rollback: Callable[..., Any], rollback_config: Any,
                      done: list[Any], what: str) -> Compensation:
        if not callable(rollback):
            raise CodeError(f"{what}: rollback must be callable (ctx, output, error), "
                            f"not {rollback!r}")
        rb = resolve(rollback_config, f"{what}: the rollback_config")
        ctx = StepContext(info, resolved, lambda: self._attempts_at(done[1]))

        def compensate() -> Any:
            return rollback(ctx, done[0], self._failure.error)

        return Compensation(compensate, **step_options(rb, lambda sc: StepContext(
            StepInfo("compensate:" + info.name, 1), rb, lambda: sc.attempt)))

    def _attempts_at(self, pos: int) -> int | None:
        return extend.attempts_at(self._wf, pos)


def _config_and_fn(args: tuple[Any, ...], what: str) -> tuple[Any, Any]:
    if len(args) == 1:
        return None, args[0]
    if len(args) == 2:
        return args[0], args[1]
    raise CodeError(f"{what} takes (name, fn) or (name, config, fn), not {len(args) + 1} "
                    "argument(s)")


def _ms(value: Any, what: str) -> int:
    try:
        return to_ms(value, what)
    except (TypeError, ValueError) as e:
        raise CodeError(str(e)) from None


__all__ = ["DEFAULT_WAIT", "Failure", "WorkflowStep"]
