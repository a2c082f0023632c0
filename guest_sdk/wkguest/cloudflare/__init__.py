"""Cloudflare Workflows' API over the workflow runner (wkguest.workflow).

    from wkguest.cloudflare import (NonRetryableError, Workflow, WorkflowEntrypoint,
                                    WorkflowEvent, WorkflowStep, serve)

    class IngestMaterial(WorkflowEntrypoint):
        def run(self, event: WorkflowEvent, step: WorkflowStep):
            pages = step.do("count pages", lambda: count_pages(event.payload["materialId"]))
            for first in range(1, pages + 1, 10):
                step.do("convert", {"retries": {"limit": 3, "delay": "10 seconds",
                                                "backoff": "exponential"}},
                        lambda: convert_pages(event.payload["materialId"], first, first + 9))
            step.sleep("let the index settle", "1 minute")
            review = step.wait_for_event("review", type="reviewed", timeout="1 day")
            if not review.payload["ok"]:
                raise NonRetryableError("rejected")
            return {"pages": pages}

    Handler = serve(IngestMaterial)        # module level; serve(cls, config=None, env=None)

and from another actor: `INGEST = Workflow("ingest")` at module level, then
`inst = INGEST.create(params={"materialId": "m1"})`, `inst.status().status`,
`inst.send_event(type="reviewed", payload={"ok": True})`.

Python names for Cloudflare's: createBatch → create_batch, sendEvent → send_event,
waitForEvent → wait_for_event, sleepUntil → sleep_until, rollbackConfig →
rollback_config. Steps run synchronously: `step.do` returns the step's result.

- `event`: `payload` (create's params), `instance_id`, `timestamp` (the instance's
  creation, a UTC datetime) and `timestamp_ms` (events.py).
- `step.do(name, [config,] fn, rollback=, rollback_config=)`: config as Cloudflare's
  (`retries`: limit, delay, backoff; `timeout`), with Cloudflare's defaults (5 retries,
  "10 seconds", exponential) but no timeout unless given (config.py). `fn` gets the step
  context (`ctx.attempt`, `ctx.step.name`, `ctx.step.count`, `ctx.config`) if it takes an
  argument (context.py). `rollback(ctx, output, error)` undoes a completed step when the
  instance fails, newest first (step.py).
- `step.sleep(name, "1 minute")`, `step.sleep_until(name, datetime | ms)`,
  `step.wait_for_event(name, type=, timeout="24 hours")`, which raises
  WorkflowTimeoutError when no event comes in time.
- Any exception escaping `run()` fails the instance (errored), after its rollbacks
  (entrypoint.py). `NonRetryableError` raised in a step fails that step at once.
- `Workflow(cls)`: create, create_batch, get; `WorkflowInstance`: status, pause, resume,
  terminate(rollback=), restart(from_step=), send_event (binding.py).
- `status()` names the runner's states as Cloudflare's: queued, running, waiting,
  paused, complete, errored (failed, or parked: `state` says which), terminated
  (terminated, or cancelled by a terminate with rollback) (states.py).

The rules are the runner's (docs/workflows.md): between steps the code must make the
same decisions on every replay, and a step may run more than once.

Modules: `entrypoint` (WorkflowEntrypoint, serve), `step` (WorkflowStep), `config` (a
step's config as wf.step's options), `context` (the step context), `events`
(WorkflowEvent, the event a wait took), `binding` (Workflow, WorkflowInstance,
InstanceStatus), `states` (the status names), `errors`.
"""

from __future__ import annotations

from .binding import InstanceStatus, Workflow, WorkflowInstance
from .context import StepContext, StepInfo
from .entrypoint import WorkflowEntrypoint, serve, workflow_function
from .errors import NonRetryableError, WorkflowError, WorkflowTimeoutError
from .events import ReceivedEvent, WorkflowEvent
from .states import STATUS_OF, STATUSES, cloudflare_status
from .step import WorkflowStep

__all__ = [
    "STATUSES",
    "STATUS_OF",
    "InstanceStatus",
    "NonRetryableError",
    "ReceivedEvent",
    "StepContext",
    "StepInfo",
    "Workflow",
    "WorkflowEntrypoint",
    "WorkflowError",
    "WorkflowEvent",
    "WorkflowInstance",
    "WorkflowStep",
    "WorkflowTimeoutError",
    "cloudflare_status",
    "serve",
    "workflow_function",
]
