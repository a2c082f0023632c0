"""`Cursor`: the run's position over its journal, the replay core, and the one interface
through which the features reach it.

The function runs from the top in every event that moves the instance. Each call to a
primitive takes the next position (`enter`). A recorded position is answered from the
journal (`replay`): the reorder check, then its kind's answer (answers.py; an unknown kind
is a JournalError); the first position past the journal is new work (`new`), done by the
Frontier.

A feature's call (a group, a child, an emit: `Run`'s methods) gets the cursor and uses
only what is public here: `enter`, `recorded`, `replay`, `new`, `guard` (the no-nesting
rule), `refuse`, `stop`, `entry` and `skip`, the `frontier`, the `retry` policy and the
`completions` hook (a completed step's options: the saga's).

`Run` (run.py), what the workflow function gets, holds the cursor out of the user's
sight and delegates to it. Steps are the cursor's own: the hot path, a recorded step that
returned a plain value, is kept to two indexes and one compare, since replay costs per
position and per event (see the comment above `step`).
"""

from __future__ import annotations

from collections.abc import Callable
from types import CoroutineType
from typing import Any, NoReturn, Protocol, Unpack

from ..errors import CodeError, JournalError, NonRetryable, StepFailed, WorkflowSignal
from . import attempt, overlapping
from .answers import REPLAY
from .attempt import StepResult
from .config import Retry, StepOptions
from .explain import reordered
from .frontier import Frontier
from .journal import Journal
from .kinds import STEP, call_of, state_of
from .policy import override
from .step_slot import Outcome
from .tx import tables_of
from .values import check_name

_NESTED = "workflow primitives cannot be called inside a step's function"


class Updates(Protocol):
    """The updates' hook (updates/taking.py), once the function registered a handler:
    told of each position a primitive is about to take."""

    def before(self, run: Cursor, pos: int) -> int:
        """Apply the updates recorded at `pos` (a replay), or waiting there (new work);
        the position the primitive then takes."""


class Completions(Protocol):
    """Told of each completed step that was given options (the saga keeps its
    compensation, saga/compensations.py)."""

    def note(self, pos: int, name: str, opts: Any) -> None: ...


def _step_method(keyed: bool) -> Callable[..., Any]:
    """`Cursor.step` or, `keyed`, `Cursor.step_keyed` (what `wf.step` and `wf.step_keyed`
    are: run.py says what they do). One body, `keyed` fixed in each, so that sharing it
    costs the hot path no call.

    The hot path: a recorded step that returned a plain value. Its key equals its name
    only for that kind, and past the journal the index raises (a try costs nothing until
    it does). Options are **kwargs on purpose: four keyword-only defaults cost a third of
    this path."""

    def step(self: Cursor, name: str, f: Callable[..., Any],
             **opts: Unpack[StepOptions]) -> Any:
        pos = self._pos
        try:
            if self._keys[pos] == name:
                self._pos = pos + 1
                if opts:
                    self.completed(pos, name, opts)
                return self._results[pos]
        except IndexError:
            pass
        return self._unwrap(name, pos, self._step(name, f, keyed, opts))

    step.__name__ = step.__qualname__ = "step_keyed" if keyed else "step"
    step.__doc__ = ("`wf.step_keyed` (run.py's KeyedStepCall)" if keyed
                    else "`wf.step` (run.py's StepCall)")
    return step


class Cursor:
    """The run's position over the journal (see the module's doc). `Run` holds one."""

    __slots__ = ("_pos", "_kinds", "_keys", "_journal", "_results", "_front", "_retry",
                 "_busy", "completions", "patches", "run_id", "stopped", "updates")

    def __init__(self, journal: Journal, front: Frontier, retry: Retry, run_id: str) -> None:
        self._pos = 0
        self._journal = journal
        self._kinds = journal.kinds
        self._keys = journal.keys
        self._results = journal.results
        self._front = front
        self._retry = retry
        self._busy = False  # a step's function is running: primitives may not nest
        self.completions: Completions | None = None
        self.patches: dict[str, bool] | None = None  # patched()'s answers in this run
        self.run_id = run_id
        self.stopped: WorkflowSignal | None = None
        self.updates: Updates | None = None  # set once the function registers a handler

    @property
    def position(self) -> int:
        """The position the next primitive will take."""
        return self._pos

    def key(self, position: int | None = None) -> str:
        """The idempotency key of a position (default: the next): run_id and position,
        so a later run under the same id (after retention) never reuses one."""
        return f"{self.run_id}-{self._pos if position is None else position}"

    # -- steps -------------------------------------------------------------------------

    step = _step_method(keyed=False)
    step_keyed = _step_method(keyed=True)

    def try_step(self, name: str, f: Callable[[], Any], opts: StepOptions) -> StepResult:
        """As `step`, but the final error comes back as a StepResult instead of raising."""
        ok, value, error, n = self._step(name, f, False, opts)
        return StepResult(ok, value, error, n)

    @staticmethod
    def _unwrap(name: str, pos: int, out: Outcome) -> Any:
        ok, value, error, n = out
        if ok:
            return value
        raise StepFailed(name, pos, error or "", n)

    def _step(self, name: str, f: Callable[..., Any], keyed: bool, opts: StepOptions) -> Outcome:
        pos = self.enter()
        if pos < len(self._kinds):
            out: Outcome = self.replay(pos, STEP, name)
            if out[0] and opts:
                self.completed(pos, name, opts)
            return out
        check_name(name, "step")
        compensate = opts.pop("compensate", None)
        try:
            tables = tables_of(opts.pop("tx", False), keyed)
            retry = override(self._retry, dict(opts))
        except (TypeError, ValueError) as e:
            self.refuse(f"wf.step({name!r}): {e}")
        fn = (lambda: f(self.key(pos))) if keyed else f
        front = self._front
        out = self.new(pos, lambda: attempt.step(front, pos, name, self.guard(fn), retry,
                                                 tables))
        if out[0] and compensate is not None:
            self.completed(pos, name, {"compensate": compensate})
        return out

    def completed(self, pos: int, name: str, opts: Any) -> None:
        """Step `name` at `pos` completed with options `opts`: the `completions` hook
        keeps its compensation, if it has one."""
        if opts.get("compensate") is not None and self.completions is not None:
            self.completions.note(pos, name, opts)

    # -- the features' interface -----------------------------------------------------

    @property
    def frontier(self) -> Frontier:
        """Where new work is done (frontier.py)."""
        return self._front

    @property
    def retry(self) -> Retry:
        """The Config's retry policy: a step's, unless its options say otherwise."""
        return self._retry

    def enter(self) -> int:
        """The position a primitive takes, after the updates applied before it (the
        `updates` hook). Raises the signal that stopped the run again (the function
        swallowed it and went on), and NonRetryable for a primitive called inside a
        step's function."""
        if self.stopped is not None:
            raise self.stopped  # the function swallowed a signal and went on: stop again
        if self._busy:
            raise NonRetryable(_NESTED)
        if self.updates is not None:
            return self.updates.before(self, self._pos)
        return self._pos

    def at(self) -> int:
        """As `enter`, for a call that may take no position (a registration, `patched`):
        its checks, and no update taken before it. An update is taken only where a
        primitive takes the position, so that a replay takes it at the same place in the
        code as the run did (a registration reaches the same position earlier)."""
        if self.stopped is not None:
            raise self.stopped
        if self._busy:
            raise NonRetryable(_NESTED)
        return self._pos

    def recorded(self, pos: int) -> bool:
        """Whether the journal holds position `pos` (else it is new work)."""
        return pos < len(self._kinds)

    def entry(self, pos: int) -> tuple[str, str]:
        """The kind and name recorded at `pos`, a recorded position."""
        return self._kinds[pos], self._journal.name(pos)

    def state_at(self, pos: int) -> str:
        """The state of recorded position `pos` as the steps route names it: "done",
        "failed", "timed-out" (a wait's timeout: kinds.py)."""
        return state_of(self._kinds[pos])

    def kind_at(self, pos: int) -> str:
        """The kind recorded at `pos`, a recorded position."""
        return self._kinds[pos]

    def skip(self, pos: int) -> None:
        """Pass over recorded position `pos`, answering nothing (a patch marker)."""
        self._pos = pos + 1

    def new(self, pos: int, work: Callable[[], Any]) -> Any:
        """Do new work at `pos` (past the journal): `work()`'s answer, the position then
        taken. A signal it raises stops the run."""
        try:
            out = work()
        except WorkflowSignal as s:
            self.stopped = s
            raise
        self._pos = pos + 1
        return out

    def guard(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """`fn`, run as user code inside a step: primitives called meanwhile refuse."""
        def guarded(*args: Any) -> Any:  # a tx step's function takes its handle
            self._busy = True
            try:
                out = fn(*args)
            finally:
                self._busy = False
            if isinstance(out, CoroutineType):  # an async step's code runs as resumed
                return overlapping.busy_while(out, self._set_busy)
            return out

        return guarded

    def _set_busy(self, busy: bool) -> None:
        self._busy = busy

    def refuse(self, message: str) -> NoReturn:
        """A mistake in the workflow's code: the instance parks, saying `message`."""
        self.stopped = CodeError(message)
        raise self.stopped from None

    def stop(self, signal: WorkflowSignal) -> NoReturn:
        """Stop the run with `signal` (what the runner then reads as `stopped`)."""
        self.stopped = signal
        raise signal

    def show_until(self, pos: int) -> None:
        """Show the function only the positions before `pos` (a cancel's stop)."""
        self._kinds = self._kinds[:pos]
        self._keys = self._keys[:pos]
        self._results = self._results[:pos]

    def go_on(self, pos: int, front: Frontier) -> None:
        """Go on from `pos` over the whole journal with `front` (the compensations')."""
        j = self._journal
        self._kinds, self._keys, self._results = j.kinds, j.keys, j.results
        self._front, self._pos, self.stopped = front, pos, None

    # -- replay ----------------------------------------------------------------------

    def replay(self, pos: int, call: str, name: str) -> Any:
        """Answer recorded position `pos`, reached by primitive `call` named `name`.
        Raises Reordered (another primitive or name was recorded), JournalError."""
        kind = self._kinds[pos]
        how = REPLAY.get(kind)
        if how is None:
            self.stop(JournalError(
                f"position {pos} holds a journal entry of kind {kind!r}, which this runner "
                "does not know (was it written by a newer SDK?)"))
        recorded_call, answer = how
        self._expect(pos, call, name, recorded_call or call_of(kind))
        return answer(self._results[pos])

    def _expect(self, pos: int, call: str, name: str, recorded_call: str) -> None:
        recorded = self._journal.name(pos)
        if call != recorded_call or name != recorded:
            self.stop(reordered(pos, self._kinds[pos], recorded, call, name))
        self._pos = pos + 1
