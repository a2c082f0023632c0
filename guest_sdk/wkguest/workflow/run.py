"""`Run`: what a workflow function receives, and the replay core.

The function runs from the top in every event that moves the instance. Each call to a
primitive takes the next position. A recorded position is answered from the journal by
one `_replay_<kind>` method per kind of entry (core/kinds.py), found in the table `_REPLAY`
(an unknown kind is a JournalError); the first position past the journal is new work,
done by the Frontier.

The hot path, a recorded step that returned a plain value, is kept to two indexes and one
compare: replay cost is per position and per event (see the comment above `step`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn, Unpack

from ..durations import Duration
from .children.calls import Children
from .core.config import Retry, StepOptions
from .core.deterministic import Helpers
from .core.frontier import Frontier, Outcome, reordered
from .core.journal import Journal
from .core.kinds import (
    EMITTED,
    GROUP_SETTLED,
    NOW_TAKEN,
    PATCH_MARKER,
    RANDOM_TAKEN,
    SLEEP,
    SLEEP_PASSED,
    STEP,
    STEP_FAILED,
    STEP_RETURNED,
    STEP_RETURNED_TAGGED,
    UUID_TAKEN,
    WAIT,
    WAIT_TIMED_OUT,
    WAIT_TOOK_EVENT,
    WAIT_TOOK_EVENT_TAGGED,
    call_of,
)
from .core.moments import Moment, check_duration, check_time
from .core.policy import override
from .core.tx import tables_of
from .core.values import check_ms, check_name, revive
from .errors import (
    CodeError,
    ContinueAsNew,
    Fail,
    JournalError,
    NonRetryable,
    StepFailed,
    WorkflowSignal,
)
from .events.calls import Emits
from .groups.branches import StepResult as StepResult
from .groups.calls import Groups
from .saga.compensations import Saga


class Run(Helpers, Emits, Saga, Children, Groups):
    """The handle a workflow function gets: `def order(wf: Run, input): ...`.

    Its deterministic helpers and `patched` come from `Helpers` (core/deterministic.py)."""

    __slots__ = ("_pos", "_kinds", "_keys", "_journal", "_results", "_front", "_retry",
                 "_busy", "_patches", "_saga", "run_id", "stopped")

    def __init__(self, journal: Journal, front: Frontier, retry: Retry, run_id: str) -> None:
        self._pos = 0
        self._journal = journal
        self._kinds = journal.kinds
        self._keys = journal.keys
        self._results = journal.results
        self._front = front
        self._retry = retry
        self._busy = False  # a step's function is running: primitives may not nest
        self._patches: dict[str, bool] | None = None  # patched()'s answers in this run
        self._saga: list[Any] | None = None  # the compensations registered (saga/compensations.py)
        self.run_id = run_id
        self.stopped: WorkflowSignal | None = None

    @property
    def position(self) -> int:
        """The position the next primitive will take."""
        return self._pos

    def key(self, position: int | None = None) -> str:
        """The idempotency key of a position (default: the next): run_id and position,
        so a later run under the same id (after retention) never reuses one."""
        return f"{self.run_id}-{self._pos if position is None else position}"

    # -- steps ---------------------------------------------------------------------
    # The hot path of `step` and `step_keyed`: a recorded step that returned a plain
    # value. Its key equals its name only for that kind, and past the journal the index
    # raises (a try costs nothing until it does). Options are **kwargs on purpose: four
    # keyword-only defaults cost a third of this path.

    def step(self, name: str, f: Callable[[], Any], **opts: Unpack[StepOptions]) -> Any:
        """Run `f` once and record its result; later runs get the recorded result.

        An exception from `f` is retried with backoff (options, core/policy.py: attempts or
        limit, backoff_ms or delay, backoff, factor, max_backoff_ms, timeout or
        timeout_ms); when the attempts run out (or `f` raised NonRetryable) this raises
        StepFailed, which fails the workflow unless it is caught. The value comes back as
        it will on every replay (see core/values.py). `wf.step_context` tells `f` its name,
        count and attempt (core/context.py). With `tx=True` (or `tx=Tables(...)`), `f(db)`
        gets a `TxDb`, and what it writes commits in one transaction with the step's
        result (core/tx.py).
        """
        # The replay fast path, inlined here and in step_keyed on purpose: it runs once
        # per recorded position in every event, and a shared helper would add a call.
        pos = self._pos
        try:
            if self._keys[pos] == name:
                self._pos = pos + 1
                if opts:
                    self._note_compensation(pos, name, opts)
                return self._results[pos]
        except IndexError:
            pass
        return self._unwrap(name, pos, self._step(name, f, False, opts))

    def step_keyed(self, name: str, f: Callable[[str], Any],
                   **opts: Unpack[StepOptions]) -> Any:
        """As `step`, and `f` receives the step's idempotency key (see `key`)."""
        pos = self._pos
        try:
            if self._keys[pos] == name:
                self._pos = pos + 1
                if opts:
                    self._note_compensation(pos, name, opts)
                return self._results[pos]
        except IndexError:
            pass
        return self._unwrap(name, pos, self._step(name, f, True, opts))

    def try_step(self, name: str, f: Callable[[], Any],
                 **opts: Unpack[StepOptions]) -> StepResult:
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
        pos = self._enter()
        if pos < len(self._kinds):
            out: Outcome = self._replay(pos, STEP, name)
            if out[0] and opts:
                self._note_compensation(pos, name, opts)
            return out
        check_name(name, "step")
        compensate = opts.pop("compensate", None)
        try:
            tables = tables_of(opts.pop("tx", False), keyed)
            retry = override(self._retry, dict(opts))
        except (TypeError, ValueError) as e:
            self.stopped = CodeError(f"wf.step({name!r}): {e}")
            raise self.stopped from None
        fn = (lambda: f(self.key(pos))) if keyed else f
        out = self._new(pos, lambda: self._front.step(pos, name, self._no_nesting(fn), retry,
                                                      tables))
        if out[0] and compensate is not None:
            self._note_compensation(pos, name, {"compensate": compensate})
        return out

    # -- sleeps and events ---------------------------------------------------------

    def sleep(self, name: str, duration: Duration) -> None:
        """Wait `duration` (an int of milliseconds, or "10 seconds", "5 minutes", a
        timedelta: wkguest.durations), counted from when this position is first reached."""
        self._sleep(name, duration, relative=True)

    def sleep_until(self, name: str, when: Moment) -> None:
        """Wait until `when`: ms since the Unix epoch (host clock), or a datetime with a
        timezone (a naive one is an error: it names no instant)."""
        self._sleep(name, when, relative=False)

    def _sleep(self, name: str, t: object, relative: bool) -> None:
        pos = self._enter()
        if pos < len(self._kinds):
            self._replay(pos, SLEEP, name)
            return
        check_name(name, "sleep")
        what = f"wf.{'sleep' if relative else 'sleep_until'}({name!r})"
        ms = self._duration(check_duration if relative else check_time, t, what)
        self._new(pos, lambda: self._front.sleep(
            pos, name, self._front.db.now() + ms if relative else ms))

    def wait_for_event(self, name: str, timeout: Duration | None = None, *,
                       timeout_ms: int | None = None) -> Any:
        """The payload of the oldest event `name` not taken by an earlier wait, or None
        once `timeout` has passed, counted from when this position is first reached: an
        int of milliseconds or any duration ("1 day"); or `timeout_ms=`, an int."""
        pos = self._enter()
        if pos < len(self._kinds):
            return self._replay(pos, WAIT, name)
        check_name(name, "event")
        what = f"wf.wait_for_event({name!r}): the timeout"
        if (timeout is None) == (timeout_ms is None):
            self._code(f"{what}: give one, as timeout= (a duration) or timeout_ms= (an int)")
        ms = (self._duration(check_duration, timeout, what) if timeout_ms is None
              else self._duration(check_ms, timeout_ms, f"{what} timeout_ms"))
        return self._new(pos, lambda: self._front.wait(pos, name, ms))

    def continue_as_new(self, input: Any) -> NoReturn:
        """End this run and begin a fresh one of the same instance, with `input` and an
        empty journal (a new run id), from the next alarm. Pending events, the emitted
        stream and the instance's own tables are kept; the old run's journal is deleted
        in the same transaction as the new run begins (core/continuation.py)."""
        self._enter()
        self.stopped = ContinueAsNew(input)
        raise self.stopped

    def fail(self, message: str) -> NoReturn:
        """Fail the workflow with `message` (same as `raise Fail(message)`)."""
        raise Fail(message)

    # -- machinery -----------------------------------------------------------------

    def _duration(self, check: Callable[[object, str], int], t: object, what: str) -> int:
        try:
            return check(t, what)
        except (TypeError, ValueError) as e:
            self._code(str(e))

    def _code(self, message: str) -> NoReturn:
        """A mistake in the workflow's code: the instance parks, saying `message`."""
        self.stopped = CodeError(message)
        raise self.stopped from None

    def _enter(self) -> int:
        if self.stopped is not None:
            raise self.stopped  # the function swallowed a signal and went on: stop again
        if self._busy:
            raise NonRetryable("workflow primitives cannot be called inside a step's function")
        return self._pos

    def _new(self, pos: int, work: Callable[[], Any]) -> Any:
        try:
            out = work()
        except WorkflowSignal as s:
            self.stopped = s
            raise
        self._pos = pos + 1
        return out

    def _no_nesting(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        def guarded(*args: Any) -> Any:  # a tx step's function takes its handle
            self._busy = True
            try:
                return fn(*args)
            finally:
                self._busy = False

        return guarded

    def _replay(self, pos: int, call: str, name: str) -> Any:
        kind = self._kinds[pos]
        replay = _REPLAY.get(kind)
        if replay is None:
            self.stopped = JournalError(
                f"position {pos} holds a journal entry of kind {kind!r}, which this runner "
                "does not know (was it written by a newer SDK?)")
            raise self.stopped
        return replay(self, pos, call, name)

    def _expect(self, pos: int, call: str, name: str, recorded_call: str) -> None:
        recorded = self._journal.name(pos)
        if call != recorded_call or name != recorded:
            self.stopped = reordered(pos, self._kinds[pos], recorded, call, name)
            raise self.stopped
        self._pos = pos + 1

    def _replay_step_returned(self, pos: int, call: str, name: str) -> Outcome:
        self._expect(pos, call, name, STEP)
        return True, self._results[pos], None, 0

    def _replay_step_returned_tagged(self, pos: int, call: str, name: str) -> Outcome:
        self._expect(pos, call, name, STEP)
        return True, revive(self._results[pos]), None, 0

    def _replay_step_failed(self, pos: int, call: str, name: str) -> Outcome:
        self._expect(pos, call, name, STEP)
        error, attempts = self._results[pos]
        return False, None, error, attempts

    def _replay_sleep_passed(self, pos: int, call: str, name: str) -> None:
        self._expect(pos, call, name, SLEEP)

    def _replay_wait_took_event(self, pos: int, call: str, name: str) -> Any:
        self._expect(pos, call, name, WAIT)
        return self._results[pos]

    def _replay_wait_took_event_tagged(self, pos: int, call: str, name: str) -> Any:
        self._expect(pos, call, name, WAIT)
        return revive(self._results[pos])

    def _replay_wait_timed_out(self, pos: int, call: str, name: str) -> None:
        self._expect(pos, call, name, WAIT)

    def _replay_recorded(self, pos: int, call: str, name: str) -> Any:
        # A helper's value (core/deterministic.py). A patch marker raises here: patched() reads
        # markers itself, so only another primitive replays one, which is a reorder.
        self._expect(pos, call, name, call_of(self._kinds[pos]))
        return self._results[pos]


# How each kind of final entry answers its position when replayed (the pending kinds are
# never in a journal: the Frontier handles them).
_REPLAY: dict[str, Callable[[Run, int, str, str], Any]] = {
    STEP_RETURNED: Run._replay_step_returned,
    STEP_RETURNED_TAGGED: Run._replay_step_returned_tagged,
    STEP_FAILED: Run._replay_step_failed,
    SLEEP_PASSED: Run._replay_sleep_passed,
    WAIT_TOOK_EVENT: Run._replay_wait_took_event,
    WAIT_TOOK_EVENT_TAGGED: Run._replay_wait_took_event_tagged,
    WAIT_TIMED_OUT: Run._replay_wait_timed_out,
    NOW_TAKEN: Run._replay_recorded,
    RANDOM_TAKEN: Run._replay_recorded,
    UUID_TAKEN: Run._replay_recorded,
    PATCH_MARKER: Run._replay_recorded,
    EMITTED: Run._replay_recorded,
    GROUP_SETTLED: Run._replay_recorded,  # a group's record: groups/calls.py reads it
}
