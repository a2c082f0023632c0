"""The saga's part in the runner's runs (core/runner.py's `Failures`): a failure runs the
compensations before the instance finishes, a cancel may ask for them, and a run of an
instance cancelled with compensation is the saga's own (cancelling.py)."""

from __future__ import annotations

from typing import Any

from ..backend import Backend
from ..core import told
from ..core.cursor import Cursor
from ..core.frontier import Frontier
from ..core.instance import PARKED, Loaded
from ..core.journal import Journal
from ..core.runner import Runner
from ..errors import WorkflowSignal
from .cancelling import Marks, cancelled_run
from .compensations import COMPENSATING, Compensations, compensating, outcome


class Saga:
    """The saga's hooks, over the instance's cancel mark (one per Runner)."""

    def __init__(self, db: Backend) -> None:
        self.marks = Marks(db)  # a cancel with compensation under way

    def resumes(self, runner: Runner, loaded: Loaded, journal: Journal, input_value: Any,
                now: int, watchdog: int) -> bool:
        """A compensating instance whose cancel asked for compensation: its run is the
        saga's (cancelling.py)."""
        mark = self.marks.mark() if loaded.state == COMPENSATING else None
        if mark is None:
            return False
        cancelled_run(runner, self.marks, loaded, journal, input_value, now, watchdog,
                      mark[1])
        return True

    def failed(self, runner: Runner, run: Cursor, loaded: Loaded, front: Frontier, bad: int,
               error: str | None, state: str) -> None:
        """The workflow's own failure (or a cancel with compensation, as `state`): its
        compensations run, newest first, as steps after the failure, then it finishes.
        A compensation's backoff or the budget stops the run, compensating."""
        settle = runner.settle
        if run.stopped is not None:  # the function swallowed a signal: the signal wins
            return settle.stopped(run.stopped, loaded, front, bad)
        done = run.completions
        if not (isinstance(done, Compensations) and done.entries) and state == "failed":
            return settle.finish(state, None, False, error)
        if loaded.state != COMPENSATING:  # said at once: a trap inside one keeps it
            self.marks.compensating(runner.db.now())
        run.updates = None  # a workflow undoing its steps takes no more updates
        try:
            count, failed = done.run_all() if isinstance(done, Compensations) else (0, [])
        except WorkflowSignal as s:
            return settle.stopped(compensating(run.stopped or s), loaded, front, bad)
        if count:
            told.compensated(runner.db, front.journal.run_id, count, failed)
        settle.finish(state, None, False, outcome(count, failed, error))

    def cancel(self, runner: Runner) -> bool:
        """A cancel with compensation: its next run, from now, replays the function to its
        first new position, runs its compensations and then finishes it as cancelled. A
        parked instance never compensates (False: it is cancelled at once); one already
        compensating (its own failure, or a cancel before) goes on as it is."""
        state = self.marks.state()
        if state == COMPENSATING:
            return True
        if state == PARKED:
            return False
        runner.db.alarm_set(runner.db.now())  # first: a cut before the mark runs it
        self.marks.ask(runner.db.now())
        return True
