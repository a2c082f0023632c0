"""The dry replay: the workflow function over its recorded journal, running nothing new.

It stops at the first position that is not recorded (a step to run, a pending one, a
sleep or a wait to go on with, a helper's value to draw, an emit), and advances nothing:
no attempt is counted, no alarm set, no event taken, nothing written. A finished instance
replays its whole journal. Queries answer from the state it reaches (`answer`); the
compatibility report to come will replay a history the same way.

Two guards make "writes nothing" hold whatever the primitive: the frontier gets the
database only through `ReadOnly`, whose first write, alarm or deletion stops the replay
(`DryStop`) before it is made; and every primitive's new work writes before it runs user
code (a step's attempt is counted before its function runs), so no step function runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from wkguest.readonly import read_only

from ..core.cursor import Cursor
from ..core.explain import describe
from ..core.readonly import DryStop as DryStop
from ..core.readonly import ReadOnly
from ..core.runner import Runner
from ..core.store import Store
from ..core.values import encode
from ..errors import (
    CodeError,
    ContinueAsNew,
    Fail,
    JournalError,
    Reordered,
    StepFailed,
    Suspend,
    UnsupportedValue,
    ValueTooLarge,
    WorkflowSignal,
)
from .calls import Handler, QueryFrontier


class NotReplayable(Exception):
    """The recorded journal does not replay with this code: there is no state to answer
    from. `kind`: "reordered" (a recorded position is another call now), "undecodable"
    (a recorded value or the input does not decode), or "code" (a mistake in the code,
    or the function raised)."""

    def __init__(self, message: str, kind: str = "code") -> None:
        super().__init__(message)
        self.kind = kind


class NoQuery(LookupError):
    """The replayed workflow registered no query of that name."""


class QueryFailed(Exception):
    """The query's handler raised, called a primitive, or answered an unrecordable value."""


@dataclass
class Replayed:
    """Where a dry replay got to: the Run (its `position` is where it stopped), whether
    the function ended (returned, or failed as recorded), and the queries registered."""

    run: Cursor
    ended: bool
    queries: dict[str, Handler]
    output: Any = None  # what the function returned, if it returned


def replay(runner: Runner) -> Replayed | None:
    """Replay the instance dry (see the module's doc). None: there is no instance.

    Raises NotReplayable, and StoreFault (its database failed)."""
    ro = ReadOnly(runner.db)
    store = Store(ro)
    j = runner.journal
    loaded = store.load(len(j) if j else 0, j.run_id if j else "")
    if loaded is None:
        return None
    try:
        journal, input_value = runner.journal_for(loaded)
    except JournalError as e:
        runner.forget()  # the next run reads it all again
        raise NotReplayable(str(e), "undecodable") from None
    front = QueryFrontier(store, ro, journal, loaded.pending, runner.config.max_value_bytes,
                        runner.config.run_budget_ms, ro.now())
    front.queries = {}
    run = runner.new_run(journal, front, loaded.run_id)
    out: list[Any] = []
    ended = _run(runner, run, input_value, out)
    return Replayed(run, ended, front.queries, out[0] if out else None)


def _run(runner: Runner, run: Cursor, input_value: Any, out: list[Any]) -> bool:
    """Whether the function ended over the recorded journal (rather than stopping);
    what it returned, if it did, into `out`."""
    try:
        out.append(runner.fn(run, input_value))
    except WorkflowSignal as s:
        run.stopped = run.stopped or s
    except (StepFailed, Fail):
        pass  # the workflow's own failure, as recorded
    except Exception as e:
        if run.stopped is None:
            raise NotReplayable(f"the workflow function raised {describe(e)}") from None
    stop = run.stopped
    if stop is None:
        return True
    if isinstance(stop, DryStop | Suspend):
        return False
    if isinstance(stop, ContinueAsNew):
        return True  # the run's end: what it recorded is all of it
    if isinstance(stop, Reordered):
        raise NotReplayable(str(stop), "reordered")
    if isinstance(stop, JournalError):
        raise NotReplayable(str(stop), "undecodable")
    if isinstance(stop, CodeError):
        raise NotReplayable(str(stop))
    raise stop  # StoreFault, or a signal this replay does not know


def answer(runner: Runner, name: str, arg: Any) -> tuple[Any, int] | None:
    """Query `name` with `arg`: the handler's answer over the replayed state, and the
    position the replay stopped at. None: there is no instance.

    Raises NoQuery, QueryFailed, NotReplayable, StoreFault."""
    got = replay(runner)
    if got is None:
        return None
    handler = got.queries.get(name)
    if handler is None:
        known = ", ".join(sorted(got.queries)) or "none"
        raise NoQuery(f"the workflow registers no query {name!r} (it registers: {known})")
    run = got.run
    # A primitive called by the handler raises this at once: a query advances nothing.
    run.stopped = CodeError(f"query {name!r}: a query handler may not call workflow "
                            "primitives (it only reads the workflow's state)")
    try:
        # Nor may it change anything through the SDK's modules (its SQL, the alarm, a
        # fetch, a call): the handler only reads (docs/workflows.md, Queries).
        with read_only(f"query {name!r}"):
            value = handler(arg)
        encode(value, runner.config.max_value_bytes, f"the answer of query {name!r}")
    except (UnsupportedValue, ValueTooLarge) as e:
        raise QueryFailed(str(e)) from None
    except (Exception, WorkflowSignal) as e:
        raise QueryFailed(f"query {name!r} raised {describe(e)}") from None
    return value, run.position
