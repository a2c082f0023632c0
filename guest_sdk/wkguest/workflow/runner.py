"""`Runner`: the core's runner (core/runner.py) with the features plugged in: a `Run`
over each run's cursor as what the workflow function gets, the saga's `Failures`
(saga/hooks.py, and its compensations as the cursor's `completions`) and the children's
`Endings` (children/notices.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .backend import Backend
from .children.notices import Notices
from .core import runner as core
from .core.config import Config
from .core.cursor import Cursor
from .core.frontier import Frontier
from .core.journal import Journal
from .run import Run
from .saga.compensations import Compensations
from .saga.hooks import Saga

Workflow = Callable[[Run, Any], Any]


class Runner(core.Runner):
    """One workflow function served as an actor class, one event at a time."""

    workflow: Workflow  # the function served, as given

    def __init__(self, fn: Workflow, config: Config, backend: Backend) -> None:
        retry = config.retry

        def new_run(journal: Journal, front: Frontier, run_id: str) -> Cursor:
            cursor = Cursor(journal, front, retry, run_id)
            cursor.completions = Compensations(cursor)
            return cursor

        super().__init__(fn, config, backend, new_run, Saga(backend), Notices(backend))

    # The core (and the saga's and the events' replays) call `fn` with the run's cursor;
    # the workflow function gets a `Run` over it. Setting `fn` sets the workflow function.
    @property
    def fn(self) -> core.Function:
        return self._call_workflow

    @fn.setter
    def fn(self, workflow: core.Function) -> None:
        self.workflow = workflow

    def _call_workflow(self, cursor: Cursor, input_value: Any) -> Any:
        return self.workflow(Run(cursor), input_value)
