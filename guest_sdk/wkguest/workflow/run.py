"""`Run`: what a workflow function receives, `def order(wf: Run, input): ...`.

A Run holds the run's Cursor (core/cursor.py: steps, and the replay core) in a slot, out
of the user's sight, and has one thin method per call, each handing the cursor to the
module that does it: the cursor's steps, the core's sleeps and waits (core/waits.py) and
deterministic helpers (core/deterministic.py), and the features' calls (groups, children,
events; the saga keeps the compensations of the run's completed steps,
saga/compensations.py). Libraries over workflows reach the rest through extend.py.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NoReturn, Protocol, Unpack

from ..durations import Duration
from .children import awaited
from .children import calls as children
from .children.calls import ChildHandle
from .core import deterministic, waits
from .core.attempt import StepResult
from .core.config import StepOptions
from .core.context import StepContext
from .core.cursor import Cursor
from .core.moments import Moment
from .errors import Fail
from .events import calls as events
from .events.calls import Handler
from .groups import calls as groups
from .groups.branches import CANCEL, Won
from .updates import taking
from .updates.taking import Handler as UpdateHandler
from .updates.taking import Validator


class StepCall(Protocol):
    """`wf.step`."""

    def __call__(self, name: str, f: Callable[[], Any], **opts: Unpack[StepOptions]) -> Any:
        """Run `f` once and record its result; later runs get the recorded result.

        An exception from `f` is retried with backoff (options, core/policy.py: attempts
        or limit, backoff_ms or delay, backoff, factor, max_backoff_ms, timeout or
        timeout_ms); when the attempts run out (or `f` raised NonRetryable) this raises
        StepFailed, which fails the workflow unless it is caught. The value comes back as
        it will on every replay (see core/values.py). `wf.step_context` tells `f` its
        name, count and attempt (core/context.py). With `tx=True` (or
        `tx=Tables(...)`), `f(db)` gets a `TxDb`, and what it writes commits in one
        transaction with the step's result (core/tx.py). `compensate=` gives the step
        its undo (saga/compensations.py).
        """


class KeyedStepCall(Protocol):
    """`wf.step_keyed`."""

    def __call__(self, name: str, f: Callable[[str], Any],
                 **opts: Unpack[StepOptions]) -> Any:
        """As `wf.step`, and `f` receives the step's idempotency key (see `key`)."""


class Run:
    """The handle a workflow function gets (see the package's doc for the rules)."""

    __slots__ = ("_cursor", "step", "step_keyed")

    step: StepCall
    step_keyed: KeyedStepCall

    def __init__(self, cursor: Cursor) -> None:
        self._cursor = cursor
        # The cursor's own methods, bound once a run: a replayed step costs one call, as
        # when Run was the cursor; a method here that called them would add one a step.
        self.step = cursor.step
        self.step_keyed = cursor.step_keyed

    # -- steps (core/cursor.py) ---------------------------------------------------------

    def try_step(self, name: str, f: Callable[[], Any],
                 **opts: Unpack[StepOptions]) -> StepResult:
        """As `step`, but the final error comes back as a StepResult instead of raising."""
        return self._cursor.try_step(name, f, opts)

    @property
    def position(self) -> int:
        """The position the next primitive will take."""
        return self._cursor.position

    @property
    def run_id(self) -> str:
        """This run's id: a new one for each run of the instance (continue-as-new, or a
        start after retention)."""
        return self._cursor.run_id

    def key(self, position: int | None = None) -> str:
        """The idempotency key of a position (default: the next): run_id and position,
        so a later run under the same id (after retention) never reuses one."""
        return self._cursor.key(position)

    # -- sleeps and events ---------------------------------------------------------

    def sleep(self, name: str, duration: Duration) -> None:
        """Wait `duration` (an int of milliseconds, or "10 seconds", "5 minutes", a
        timedelta: wkguest.durations), counted from when this position is first reached."""
        waits.sleep(self._cursor, name, duration, relative=True)

    def sleep_until(self, name: str, when: Moment) -> None:
        """Wait until `when`: ms since the Unix epoch (host clock), or a datetime with a
        timezone (a naive one is an error: it names no instant)."""
        waits.sleep(self._cursor, name, when, relative=False)

    def wait_for_event(self, name: str, timeout: Duration | None = None, *,
                       timeout_ms: int | None = None) -> Any:
        """The payload of the oldest event `name` not taken by an earlier wait, or None
        once `timeout` has passed, counted from when this position is first reached: an
        int of milliseconds or any duration ("1 day"); or `timeout_ms=`, an int."""
        return waits.wait_for_event(self._cursor, name, timeout, timeout_ms)

    def continue_as_new(self, input: Any) -> NoReturn:
        """End this run and begin a fresh one of the same instance, with `input` and an
        empty journal (a new run id), from the next alarm. Pending events, the emitted
        stream and the instance's own tables are kept; the old run's journal is deleted
        in the same transaction as the new run begins (core/continuation.py)."""
        waits.continue_as_new(self._cursor, input)

    def fail(self, message: str) -> NoReturn:
        """Fail the workflow with `message` (same as `raise Fail(message)`)."""
        raise Fail(message)

    # -- deterministic helpers (core/deterministic.py) ---------------------------------

    @property
    def step_context(self) -> StepContext:
        """The context of the step attempt whose function is running (core/context.py):
        its name, count, attempt, position, key and deadline. Only inside a step's
        function: elsewhere it is a mistake in the code (CodeError: the instance parks)."""
        return deterministic.step_context(self._cursor)

    def now(self) -> int:
        """The host's time (ms since the Unix epoch) when this position was first
        reached; the same time on every replay."""
        return deterministic.now(self._cursor)

    def random(self) -> float:
        """A random float in [0, 1), drawn once; the same number on every replay."""
        return deterministic.random(self._cursor)

    def uuid(self) -> str:
        """A random UUID (version 4) as text, drawn once; the same on every replay."""
        return deterministic.uuid(self._cursor)

    def patched(self, change_id: str) -> bool:
        """Whether this run has the change `change_id`: True, recorded as a position, for
        a run that reaches it with no history there; False for a run whose history
        predates it (no position taken). The first answer for an id holds for the rest
        of the run. Raises CodeError (the instance stops) for an id that is not a valid
        name."""
        return deterministic.patched(self._cursor, change_id)

    def deprecate_patch(self, change_id: str) -> None:
        """Retire the change `change_id` once no running instance predates it: in place
        of `if wf.patched(change_id):`, with only the new branch kept. It records nothing;
        a run whose history holds the change's marker here passes over it."""
        deterministic.deprecate_patch(self._cursor, change_id)

    # -- groups (groups/calls.py) ------------------------------------------------------

    def all(self, branches: list[Any], *, name: str | None = None,
            losers: str = CANCEL) -> list[Any]:
        """Run `branches` (Step, Sleep, Wait, Child) together; their values, in order.
        Raises the StepFailed of the first branch to fail (see groups/calls.py)."""
        return groups.all_of(self._cursor, branches, name, losers)

    def all_settled(self, branches: list[Any], *, name: str | None = None
                    ) -> list[StepResult]:
        """Run `branches` together until each has settled: a StepResult per branch, in
        order (ok and value, or error and attempts)."""
        return groups.all_settled(self._cursor, branches, name)

    def any(self, branches: list[Any], *, name: str | None = None,
            losers: str = CANCEL) -> Won:
        """Run `branches` together until the first settles: `Won(index, value)`, or the
        StepFailed of that branch if it failed."""
        return groups.any_of(self._cursor, branches, name, losers)

    # -- child workflows (children/calls.py) -------------------------------------------

    def child(self, cls: str, id: str, input: Any = None, *, detach: bool = False) -> Any:
        """Start child `id` of workflow class `cls` with `input` (idempotently) and wait
        for it: its output, or ChildFailed (failed, cancelled, or not started). Two
        positions: the start and the wait. `detach`: a cancel of this workflow leaves the
        child running (by default it cancels it)."""
        return children.child(self._cursor, cls, id, input, detach)

    def spawn(self, cls: str, id: str, input: Any = None, *,
              detach: bool = False) -> ChildHandle:
        """Start the child as `child` does, without waiting: a handle for `wf.join`.
        Raises ChildFailed if it could not be started (after the start's attempts)."""
        return children.spawn(self._cursor, cls, id, input, detach)

    def join(self, handle: ChildHandle) -> Any:
        """Wait for a spawned child: its output, or ChildFailed (failed or cancelled)."""
        return children.join(self._cursor, handle)

    def wait_for_workflow(self, cls: str, id: str, timeout: Duration) -> Any:
        """Instance `id` of workflow class `cls`'s output, once it has finished: not a
        child, any instance (children/awaited.py). Raises AwaitedFailed if it failed,
        was cancelled, or cannot be awaited (unknown, not a workflow), AwaitTimedOut
        once `timeout` (a duration, from when this is first reached) has passed."""
        return awaited.wait_for_workflow(self._cursor, cls, id, timeout)

    # -- what it shows outside (events/calls.py) ---------------------------------------

    def emit(self, name: str, payload: Any = None) -> None:
        """Append event `name` with `payload` (a recorded value's types) to the
        instance's stream, once: a replay of this position appends nothing. Raises
        CodeError (the instance parks, naming the call) for a bad name or a payload that
        cannot be recorded."""
        events.emit(self._cursor, name, payload)

    def set_labels(self, labels: Mapping[str, str | None]) -> None:
        """Set the instance's labels, which operators list it by (`wkhost workflow list
        --label k=v`): each key to its value, or removed for None; other labels stay.
        Not journaled, no position: a replay sets the same again, and only a change is
        written and published, with the instance's next state (events/calls.py). At most
        16 labels; keys 1 to 64 bytes, values at most 256. Raises CodeError (the
        instance parks, naming the call) beyond them, or for a value that is not text."""
        events.set_labels(self._cursor, labels)

    def query(self, name: str, handler: Handler) -> None:
        """Register `handler(arg)` as the answer to queries `name`. It must only read the
        workflow's state: it may not call primitives. Raises CodeError for a bad name or
        a handler that is not callable."""
        events.query(self._cursor, name, handler)

    def on_update(self, name: str, handler: UpdateHandler,
                  validator: Validator | None = None) -> None:
        """Register `handler(arg)` for updates `name`: it runs in the workflow once the
        instance takes the update (at its next position past the journal: before a step,
        or while it sleeps or waits), may run steps, and its answer, or the exception it
        raises, is the update's outcome. `validator(arg)`, if given, runs as the update
        arrives, read-only as a query: raising refuses the update, recording nothing.
        Takes no position (updates/taking.py). Raises CodeError for a bad name or a
        handler that is not callable."""
        taking.on_update(self._cursor, name, handler, validator)


def cursor_of(wf: Run) -> Cursor:
    """The cursor `wf` holds, for extend.py's calls (libraries over workflows)."""
    return wf._cursor
