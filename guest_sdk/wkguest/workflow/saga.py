"""Saga compensation: a step's `compensate=`, run in reverse when the workflow fails.

    wf.step("reserve", reserve, compensate=release)
    wf.step("charge", charge, compensate=workflow.Compensation(refund, attempts=10))

A step that completed registers its compensation (a callable taking no argument, or a
`Compensation` with its own retry settings), in the order the steps are reached: on
every replay too, so each run knows the same list. When the workflow fails with its own
failure (a StepFailed escaping the function, `wf.fail`) or is cancelled with
compensation, the runner (runner.py) runs them newest first, as ordinary steps of the
same run named `compensate:<step>` at the positions after the failure: each is recorded,
retried with backoff under its own settings and replayed like any step, so a crash in
the middle resumes it and a compensation recorded as done never runs again. Reverse
order undoes the newest work first, as a stack; it is deterministic (the order in which
the code reached the steps), and for sequential code it is Cloudflare's reverse order of
step start. A compensation that fails for good is recorded and reported in the error,
and the others still run. Failures that are not the workflow's own park the instance
and compensate nothing.

A cancel with compensation (`_wk_wf_saga`, below) marks the instance `compensating`;
the next run replays the function up to its first unrecorded position, where a
`CancellingFrontier` refuses any new work (`CancelStop`), records that position, and
runs the compensations from there. Later runs hide the positions from there on from the
function, so it stops at the same place while the compensations replay after it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn, Protocol, Unpack

from .backend import Backend
from .config import Retry
from .errors import (
    CodeError,
    Fail,
    JournalError,
    Reordered,
    StepFailed,
    StoreFault,
    Suspend,
    WorkflowSignal,
)
from .frontier import Frontier, Outcome, describe
from .journal import Journal
from .kinds import PENDING_KINDS, sql_list
from .tx import Tables, tables_of
from .values import check_name

if TYPE_CHECKING:
    from .run import StepOptions
    from .runner import Runner
    from .store import Loaded

PREFIX = "compensate:"
COMPENSATING = "compensating"  # the state of an instance running its compensations
_OPTIONS = ("attempts", "backoff_ms", "factor", "max_backoff_ms")


class Compensation:
    """A compensation with its own step options: `compensate=Compensation(g,
    attempts=10)`. The retry options are a step's (any of them; the rest from the
    Config); `tx=True` (or a `Tables`) makes it a tx step: `g(db)` writes the instance's
    own tables in one transaction with its record (tx.py), so a crash never repeats it.
    They are checked when a step that carries it completes (CodeError, naming them)."""

    __slots__ = ("fn", "opts")

    def __init__(self, fn: Callable[..., Any], *, attempts: int | None = None,
                 backoff_ms: int | None = None, factor: float | None = None,
                 max_backoff_ms: int | None = None, tx: bool | Tables = False) -> None:
        self.fn = fn
        given = (attempts, backoff_ms, factor, max_backoff_ms)
        self.opts: dict[str, Any] = {k: v for k, v in zip(_OPTIONS, given, strict=True)
                                     if v is not None}
        if tx is not False:
            self.opts["tx"] = tx

    def __repr__(self) -> str:
        opts = "".join(f", {k}={v!r}" for k, v in self.opts.items())
        return f"Compensation({self.fn!r}{opts})"


# A registered compensation: the step's name, the function, its step options (retry, tx).
Entry = tuple[str, Callable[..., Any], dict[str, Any]]


class CancelStop(WorkflowSignal):
    """A run cancelled with compensation reached new work: the function stops there."""


class _Core(Protocol):
    """The part of `Run` that the saga uses."""

    _pos: int
    _kinds: list[str]
    _keys: list[str]
    _results: list[Any]
    _journal: Journal
    _front: Frontier
    _retry: Retry
    _saga: list[Entry] | None
    stopped: WorkflowSignal | None

    def try_step(self, name: str, f: Callable[[], Any],
                 **opts: Unpack[StepOptions]) -> Any: ...


class Saga:
    """A mixin of `Run`: the compensations that the run's completed steps registered."""

    __slots__ = ()

    def _note_compensation(self: _Core, pos: int, name: str, opts: Any) -> None:
        """Step `name` at `pos` completed with options `opts`; keep its compensation.
        Raises CodeError (the instance parks) for a compensate= that cannot work."""
        g = opts.get("compensate")
        if g is not None:
            _note(self, name, g)

    def _compensate(self: _Core) -> tuple[int, list[str]]:
        """Run the registered compensations, newest first, as steps from the current
        position. Returns how many there were and the final error of each that failed.
        A signal (a backoff's Suspend, a budget) propagates: the next run goes on."""
        entries = list(reversed(self._saga or []))
        failed = []
        for name, fn, opts in entries:
            got = self.try_step(PREFIX + name, fn, **opts)
            if not got.ok:
                failed.append(f"step {PREFIX + name!r} failed after {got.attempts} "
                              f"attempt(s): {got.error}")
        return len(entries), failed

    def _hide_from(self: _Core, pos: int) -> None:
        """Show the function only the positions before `pos` (a cancel's stop): the
        compensations recorded from there on are not the function's."""
        _view(self, self._kinds[:pos], self._keys[:pos], self._results[:pos])

    def _resume_at(self: _Core, pos: int, front: Frontier) -> None:
        """Go on from `pos` over the whole journal with `front`: the compensations'."""
        j = self._journal
        _view(self, j.kinds, j.keys, j.results)
        _go_on(self, pos, front)


def _note(run: _Core, name: str, g: object) -> None:
    try:
        entry = _entry(name, g, run._retry)
    except (TypeError, ValueError) as e:
        _refuse(run, f"wf.step({name!r}): compensate: {e}")
    saga = run._saga
    if saga is None:
        saga = run._saga = []
    saga.append(entry)  # positions repeat in a group's branches: the call order counts


def _view(run: _Core, kinds: list[str], keys: list[str], results: list[Any]) -> None:
    run._kinds, run._keys, run._results = kinds, keys, results


def _go_on(run: _Core, pos: int, front: Frontier) -> None:
    run._front, run._pos, run.stopped = front, pos, None


def _entry(name: str, g: object, base: Retry) -> Entry:
    check_name(PREFIX + name, "the compensation's step")  # the name its step is given
    if isinstance(g, Compensation):
        fn, opts = g.fn, g.opts
    else:
        fn, opts = g, {}  # type: ignore[assignment]
    if not callable(fn):
        raise TypeError(f"must be a callable taking no argument or a "
                        f"workflow.Compensation, not {fn!r} ({type(fn).__name__})")
    retry = {k: v for k, v in opts.items() if k != "tx"}
    base.override(**retry)  # raises naming a bad option
    tables_of(opts.get("tx", False), False)
    return name, fn, opts


def _refuse(run: _Core, message: str) -> NoReturn:
    run.stopped = CodeError(message)
    raise run.stopped from None


def outcome(count: int, failed: list[str], error: str | None) -> str | None:
    """The finished instance's error: the original failure (None for a cancel), then
    which compensations failed, if any."""
    if failed:
        what = f"{len(failed)} of {count} compensation(s) failed: " + "; ".join(failed)
        return f"{error}; {what}" if error else f"cancelled with compensation; {what}"
    if error and count:
        return f"{error} (compensated: {count} compensation(s) ran)"
    return error


def compensating(s: WorkflowSignal) -> WorkflowSignal:
    """A compensation's Suspend (a backoff, the budget) reports the state compensating."""
    if isinstance(s, Suspend) and s.state == "running":
        return Suspend(COMPENSATING, s.wake_at, s.waiting_for)
    return s


class CancellingFrontier(Frontier):
    """The frontier of a function cancelled with compensation: any new work (a step, a
    sleep, a wait, a helper's value or a marker) stops the function where it is. Built
    over a read-only database (dry.py's ReadOnly) so that any other primitive's first
    write stops it too."""

    def step(self, pos: int, name: str, fn: Callable[..., Any], retry: Retry,
             tables: Tables | None = None) -> Outcome:
        raise CancelStop(f"cancelled at position {pos}")

    def sleep(self, pos: int, name: str, wake: int) -> None:
        raise CancelStop(f"cancelled at position {pos}")

    def wait(self, pos: int, name: str, timeout_ms: int) -> Any:
        raise CancelStop(f"cancelled at position {pos}")

    def record(self, pos: int, kind: str, name: str, value: Any) -> Any:
        raise CancelStop(f"cancelled at position {pos}")


def cancelled_run(r: Runner, loaded: Loaded, journal: Journal, input_value: Any, now: int,
                  watchdog: int, stop_at: int | None) -> None:
    """A run after a cancel with compensation: the function replays up to where the
    cancel stopped it (the first run: its first unrecorded position, then recorded),
    doing nothing new; then the compensations run from there, and it is cancelled. Its
    own failure, met on the way, wins: it compensates and fails as it would have."""
    from .run import Run  # run.py imports this module

    bad = loaded.bad_runs + 1
    run = Run(journal, r._frontier(loaded, journal, now, watchdog, True), r.retry,
              loaded.run_id)
    if stop_at is not None:
        run._hide_from(stop_at)
    error, state = None, "cancelled"
    try:
        r.fn(run, input_value)
    except WorkflowSignal as s:  # any other: the function stopped (a new position, its end)
        got = run.stopped or s
        if isinstance(got, Reordered | CodeError | JournalError | StoreFault):
            return r._stopped(got, loaded, run._front, bad)
    except (StepFailed, Fail) as e:
        error, state = str(e) or "failed", "failed"
    except Exception as e:
        return r._bad_run(bad, f"the workflow function raised {describe(e)}")
    pos = run.position
    if stop_at is None and state == "cancelled":
        r.marks.stop(pos)
        loaded.pending = None  # the function's, at `pos`: dropped with the stop
    elif stop_at not in (None, pos):
        return r._park(f"cancelled with compensation at position {stop_at}, the function "
                       f"now stops at position {pos}: the code changed")
    front = r._frontier(loaded, journal, now, watchdog)
    run._resume_at(pos, front)
    r._failed(run, loaded, front, bad, error, state)


# -- the cancel's mark ------------------------------------------------------------------
# One row while a cancel with compensation is under way: when it was asked, and the
# position its function was stopped at (null until the first run after it). A table of its
# own, made by the first such cancel, so that an older SDK's instance needs no ALTER.
TABLE = "_wk_wf_saga"
_SCHEMA = f"""CREATE TABLE IF NOT EXISTS {TABLE} (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        requested_at INTEGER NOT NULL,
        stop_at INTEGER)"""
_MARK = (f"/*wk:saga-mark*/ INSERT INTO {TABLE} (id, requested_at) VALUES (1, ?)"
         " ON CONFLICT (id) DO UPDATE SET requested_at = excluded.requested_at,"
         " stop_at = NULL")
_STATE = (f"/*wk:saga-state*/ UPDATE _wk_wf SET state = '{COMPENSATING}',"
          " wake_at = max(coalesce(retry_at, ?), ?), waiting_for = NULL, updated_at = ?"
          " WHERE state NOT IN ('completed', 'failed', 'cancelled', 'parked')")
_STOP = f"/*wk:saga-stop*/ UPDATE {TABLE} SET stop_at = ?"
_DROP_PENDING = f"DELETE FROM _wk_wf_step WHERE pos >= ? AND kind IN ({sql_list(PENDING_KINDS)})"
_EXISTS = f"SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '{TABLE}'"


class Marks:
    """The SQL of a cancel with compensation. `known`: the table is known to exist."""

    __slots__ = ("db", "known")

    def __init__(self, db: Backend) -> None:
        self.db = db
        self.known: bool | None = None

    def state(self) -> str | None:
        row = self.db.query_row("SELECT state FROM _wk_wf")
        return None if row is None else str(row[0])

    def ask(self, now: int) -> None:
        """Mark the cancel, and the instance compensating from now, in one durable
        transaction. The caller sets the alarm to now first: a cut before the COMMIT
        leaves an alarm that runs it as it was."""
        self._transaction(lambda: (self.db.exec(_SCHEMA), self.db.exec(_MARK, (now,)),
                                   self.db.exec(_STATE, (now, now, now))), durable=True)
        self.known = True

    def compensating(self, now: int) -> None:
        """The instance begins its compensations (a plain write: the run's next durable
        one syncs it; lost, the next run says it again)."""
        self.db.exec(_STATE, (now, now, now))

    def mark(self) -> tuple[int, int | None] | None:
        """(requested_at, stop_at) of a cancel with compensation under way, or None."""
        if self.known is False:
            return None
        try:
            row = self.db.query_row(f"SELECT requested_at, stop_at FROM {TABLE}")
        except StoreFault:
            if self.known or self._exists():
                raise
            return None
        self.known = True
        return None if row is None else (int(row[0]), None if row[1] is None else int(row[1]))

    def stop(self, pos: int) -> None:
        """The function was stopped at `pos`: recorded, and the pending entry there (the
        function's sleep, wait or step in progress) dropped, so the compensations take
        the positions from `pos` on. A plain write: if it is lost, so is all after it."""
        self._transaction(lambda: (self.db.exec(_DROP_PENDING, (pos,)),
                                   self.db.exec(_STOP, (pos,))), durable=False)

    def _transaction(self, work: Callable[[], object], durable: bool) -> None:
        self.db.exec("BEGIN IMMEDIATE")
        try:
            work()
            if durable:
                self.db.exec_durable("/*wk:saga-commit*/ COMMIT")
            else:
                self.db.exec("COMMIT")
        except BaseException:
            with contextlib.suppress(StoreFault):  # else the host rolls it back
                self.db.exec("ROLLBACK")
            raise

    def _exists(self) -> bool:
        self.known = self.db.query_row(_EXISTS) is not None
        return self.known
