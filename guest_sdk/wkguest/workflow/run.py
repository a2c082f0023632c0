"""`Run`: what a workflow function receives, `def order(wf: Run, input): ...`.

A Run is the run's Cursor (core/cursor.py: steps, and the replay core), with one thin
method per other call, each handing the cursor to the module that does it: the core's
sleeps and waits (core/waits.py) and deterministic helpers (core/deterministic.py), and
the features' calls (groups, children, events; the saga keeps the compensations of the
run's completed steps, saga/compensations.py).
"""

from __future__ import annotations

from typing import Any, NoReturn

from ..durations import Duration
from .children import calls as children
from .children.calls import ChildHandle
from .core import deterministic, waits
from .core.attempt import StepResult
from .core.context import StepContext
from .core.cursor import Cursor
from .core.frontier import Frontier
from .core.journal import Journal
from .core.moments import Moment
from .core.retry import Retry
from .errors import Fail
from .events import calls as events
from .events.calls import Handler
from .groups import calls as groups
from .groups.branches import CANCEL, Won
from .saga.compensations import Compensations


class Run(Cursor):
    """The handle a workflow function gets (see the package's doc for the rules)."""

    __slots__ = ()

    def __init__(self, journal: Journal, front: Frontier, retry: Retry, run_id: str) -> None:
        super().__init__(journal, front, retry, run_id)
        self.completions = Compensations(self)

    # -- sleeps and events ---------------------------------------------------------

    def sleep(self, name: str, duration: Duration) -> None:
        """Wait `duration` (an int of milliseconds, or "10 seconds", "5 minutes", a
        timedelta: wkguest.durations), counted from when this position is first reached."""
        waits.sleep(self, name, duration, relative=True)

    def sleep_until(self, name: str, when: Moment) -> None:
        """Wait until `when`: ms since the Unix epoch (host clock), or a datetime with a
        timezone (a naive one is an error: it names no instant)."""
        waits.sleep(self, name, when, relative=False)

    def wait_for_event(self, name: str, timeout: Duration | None = None, *,
                       timeout_ms: int | None = None) -> Any:
        """The payload of the oldest event `name` not taken by an earlier wait, or None
        once `timeout` has passed, counted from when this position is first reached: an
        int of milliseconds or any duration ("1 day"); or `timeout_ms=`, an int."""
        return waits.wait_for_event(self, name, timeout, timeout_ms)

    def continue_as_new(self, input: Any) -> NoReturn:
        """End this run and begin a fresh one of the same instance, with `input` and an
        empty journal (a new run id), from the next alarm. Pending events, the emitted
        stream and the instance's own tables are kept; the old run's journal is deleted
        in the same transaction as the new run begins (core/continuation.py)."""
        waits.continue_as_new(self, input)

    def fail(self, message: str) -> NoReturn:
        """Fail the workflow with `message` (same as `raise Fail(message)`)."""
        raise Fail(message)

    # -- deterministic helpers (core/deterministic.py) ---------------------------------

    @property
    def step_context(self) -> StepContext:
        """The context of the step attempt whose function is running (core/context.py):
        its name, count, attempt, position, key and deadline. Only inside a step's
        function: elsewhere it is a mistake in the code (CodeError: the instance parks)."""
        return deterministic.step_context(self)

    def now(self) -> int:
        """The host's time (ms since the Unix epoch) when this position was first
        reached; the same time on every replay."""
        return deterministic.now(self)

    def random(self) -> float:
        """A random float in [0, 1), drawn once; the same number on every replay."""
        return deterministic.random(self)

    def uuid(self) -> str:
        """A random UUID (version 4) as text, drawn once; the same on every replay."""
        return deterministic.uuid(self)

    def patched(self, change_id: str) -> bool:
        """Whether this run has the change `change_id`: True, recorded as a position, for
        a run that reaches it with no history there; False for a run whose history
        predates it (no position taken). The first answer for an id holds for the rest
        of the run. Raises CodeError (the instance stops) for an id that is not a valid
        name."""
        return deterministic.patched(self, change_id)

    def deprecate_patch(self, change_id: str) -> None:
        """Retire the change `change_id` once no running instance predates it: in place
        of `if wf.patched(change_id):`, with only the new branch kept. It records nothing;
        a run whose history holds the change's marker here passes over it."""
        deterministic.deprecate_patch(self, change_id)

    # -- groups (groups/calls.py) ------------------------------------------------------

    def all(self, branches: list[Any], *, name: str | None = None,
            losers: str = CANCEL) -> list[Any]:
        """Run `branches` (Step, Sleep, Wait, Child) together; their values, in order.
        Raises the StepFailed of the first branch to fail (see groups/calls.py)."""
        return groups.all_of(self, branches, name, losers)

    def all_settled(self, branches: list[Any], *, name: str | None = None
                    ) -> list[StepResult]:
        """Run `branches` together until each has settled: a StepResult per branch, in
        order (ok and value, or error and attempts)."""
        return groups.all_settled(self, branches, name)

    def any(self, branches: list[Any], *, name: str | None = None,
            losers: str = CANCEL) -> Won:
        """Run `branches` together until the first settles: `Won(index, value)`, or the
        StepFailed of that branch if it failed."""
        return groups.any_of(self, branches, name, losers)

    # -- child workflows (children/calls.py) -------------------------------------------

    def child(self, cls: str, id: str, input: Any = None, *, detach: bool = False) -> Any:
        """Start child `id` of workflow class `cls` with `input` (idempotently) and wait
        for it: its output, or ChildFailed (failed, cancelled, or not started). Two
        positions: the start and the wait. `detach`: a cancel of this workflow leaves the
        child running (by default it cancels it)."""
        return children.child(self, cls, id, input, detach)

    def spawn(self, cls: str, id: str, input: Any = None, *,
              detach: bool = False) -> ChildHandle:
        """Start the child as `child` does, without waiting: a handle for `wf.join`.
        Raises ChildFailed if it could not be started (after the start's attempts)."""
        return children.spawn(self, cls, id, input, detach)

    def join(self, handle: ChildHandle) -> Any:
        """Wait for a spawned child: its output, or ChildFailed (failed or cancelled)."""
        return children.join(self, handle)

    # -- what it shows outside (events/calls.py) ---------------------------------------

    def emit(self, name: str, payload: Any = None) -> None:
        """Append event `name` with `payload` (a recorded value's types) to the
        instance's stream, once: a replay of this position appends nothing. Raises
        CodeError (the instance parks, naming the call) for a bad name or a payload that
        cannot be recorded."""
        events.emit(self, name, payload)

    def query(self, name: str, handler: Handler) -> None:
        """Register `handler(arg)` as the answer to queries `name`. It must only read the
        workflow's state: it may not call primitives. Raises CodeError for a bad name or
        a handler that is not callable."""
        events.query(self, name, handler)
