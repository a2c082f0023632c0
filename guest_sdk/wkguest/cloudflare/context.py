"""The step context Cloudflare hands a step's function, a delay function and a rollback:
`ctx.attempt`, `ctx.step.name`, `ctx.step.count`, `ctx.config` (the step's config with
the defaults applied). And whether a function takes it (`takes_context`).

`attempt` is read only when asked: in a step's function and a delay it is the runner's
(`wf.step_context.attempt`); in a rollback it is the attempt the rolled-back step
succeeded on, as its journal row counts it.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from wkguest.workflow.errors import CodeError

_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


@dataclass(frozen=True, slots=True)
class StepInfo:
    """The step: its `name`, and `count`: 1 for the first `step.do` of that name in the
    run, 2 for the second, ... (a loop's steps share a name)."""

    name: str
    count: int


class StepContext:
    """What a step's function, a delay function and a rollback get as `ctx` (see the
    module's doc): `attempt`, `step` (name and count) and `config`."""

    __slots__ = ("_attempt", "config", "step")

    def __init__(self, step: StepInfo, config: dict[str, Any],
                 attempt: Callable[[], int | None]) -> None:
        self.step = step
        self.config = config
        self._attempt = attempt

    @property
    def attempt(self) -> int | None:
        """1 for the first attempt (None in a rollback whose step's count is not kept)."""
        return self._attempt()

    def __repr__(self) -> str:
        return f"StepContext(step={self.step!r}, config={self.config!r})"


# Whether a function takes the context, by its code: a loop's lambdas share one code
# object, so the signature is read once per code, not once per step on every replay.
_TAKES: dict[object, bool] = {}


def takes_context(fn: object, what: str) -> bool:
    """True if `fn` takes one positional argument without a default (or *args): it gets
    the context; False if it needs none (as JS ignores extra arguments). Raises CodeError
    if it is not callable or needs more than one."""
    code = getattr(fn, "__code__", None)
    known = _TAKES.get(code) if code is not None and not inspect.ismethod(fn) else None
    if known is not None:
        return known
    if not callable(fn):
        raise CodeError(f"{what}: the step's function must be callable, not {fn!r}")
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False  # a builtin without a signature: called as it is, with nothing
    positional = [p for p in params if p.kind in _POSITIONAL]
    required = [p for p in positional if p.default is p.empty]
    if len(required) > 1:
        raise CodeError(f"{what}: the step's function takes at most one argument (the "
                        f"step context), not {len(required)}")
    # A parameter with a default is not the context's: `lambda first=first: ...` keeps
    # a loop's value, as Python code does.
    takes = bool(required) or any(p.kind == p.VAR_POSITIONAL for p in params)
    if code is not None and not inspect.ismethod(fn):
        _TAKES[code] = takes
    return takes


__all__ = ["StepContext", "StepInfo", "takes_context"]
