"""`Runner`: the core's runner (core/runner.py) with the features plugged in: `Run` as
the handle each run gets, the saga's `Failures` (saga/hooks.py) and the children's
`Endings` (children/notices.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .backend import Backend
from .children.notices import Notices
from .core import runner as core
from .core.config import Config
from .core.frontier import Frontier
from .core.journal import Journal
from .run import Run
from .saga.hooks import Saga

Workflow = Callable[[Run, Any], Any]


class Runner(core.Runner):
    """One workflow function served as an actor class, one event at a time."""

    def __init__(self, fn: Workflow, config: Config, backend: Backend) -> None:
        retry = config.retry

        def new_run(journal: Journal, front: Frontier, run_id: str) -> Run:
            return Run(journal, front, retry, run_id)

        super().__init__(fn, config, backend, new_run, Saga(backend), Notices(backend))
