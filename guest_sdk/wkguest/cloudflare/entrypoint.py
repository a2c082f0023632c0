"""`WorkflowEntrypoint` and `serve`: a Cloudflare-shaped class as a workflow actor class.

    class IngestMaterial(WorkflowEntrypoint):
        def run(self, event: WorkflowEvent, step: WorkflowStep):
            ...

    Handler = serve(IngestMaterial)     # module level; serve(cls, config=None, env=None)

Each run (every event that moves the instance, replaying from the top) makes a fresh
`cls()`, with `self.env` the `env` given to serve ({} by default), and calls
`run(event, step)`. An exception escaping `run()` fails the instance, whatever it is (a
NonRetryableError, a step out of retries, a WorkflowTimeoutError, any other), as on
Cloudflare: it becomes the runner's `Fail`, so the rollbacks of the completed steps run,
newest first, before the instance is errored; their `error` is its message. The
runner's own signals (a reorder, a journal it cannot read, a mistake in the code it
found) are not exceptions: they still park the instance.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from wkguest import workflow
from wkguest.workflow import Config, Fail, Run, StepFailed, Workflow

from .events import WorkflowEvent
from .step import Failure, WorkflowStep


class WorkflowEntrypoint:
    """Subclass it and define `run(self, event, step)`; its return value is the
    instance's output. `self.env` is the `env` given to `serve`."""

    env: Mapping[str, Any] = {}

    def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not define run(event, step)")


def workflow_function(cls: type[WorkflowEntrypoint],
                      env: Mapping[str, Any] | None = None) -> Workflow:
    """The workflow function `fn(wf, input)` that runs `cls` (what `serve` serves; also
    what a test serves on the FakeHost)."""
    if not (isinstance(cls, type) and issubclass(cls, WorkflowEntrypoint)):
        raise TypeError(f"serve: cls must be a WorkflowEntrypoint subclass, not {cls!r}")
    if env is not None and not isinstance(env, Mapping):
        raise TypeError(f"serve: env must be a mapping, not {type(env).__name__}")
    the_env: Mapping[str, Any] = {} if env is None else env

    def run(wf: Run, payload: Any) -> Any:
        failure = Failure()
        try:
            entry = cls()
            entry.env = the_env
            return entry.run(WorkflowEvent(wf, payload), WorkflowStep(wf, failure))
        except Exception as e:  # the runner's signals are BaseExceptions: they pass
            failure.error = error_text(e)
            raise Fail(failure.error) from e

    run.__name__ = run.__qualname__ = cls.__name__
    return run


def error_text(e: Exception) -> str:
    """The instance's error for an exception that escaped `run()`: a step out of retries
    says which step and why; anything else its type and message."""
    if isinstance(e, StepFailed | Fail):
        return str(e) or type(e).__name__
    text = str(e)
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def serve(cls: type[WorkflowEntrypoint], config: Config | None = None,
          env: Mapping[str, Any] | None = None) -> type[Any]:
    """Build the actor class that runs `cls` (as `workflow.serve` does) and export it.
    Call it at module level: `Handler = serve(IngestMaterial)`."""
    return workflow.serve(workflow_function(cls, env), config)


__all__ = ["WorkflowEntrypoint", "error_text", "serve", "workflow_function"]
