"""Durable workflows on actors: the replay runner and its client (wk-workflow/v1).

    from wkguest import workflow

    def order(wf: workflow.Run, input):
        reservation = wf.step_keyed("reserve", lambda key: reserve(input, key))
        wf.sleep("cool-off", 60_000)
        if wf.wait_for_event("approved", 86_400_000) is None:
            wf.fail("not approved in time")
        wf.step_keyed("charge", lambda key: charge(reservation, key))
        return {"shipped": reservation}

    Handler = workflow.serve(order, workflow.Config())

and from any other actor: `workflow.Client("orders").start("order-42", {...})`.
`wf.emit(name, payload)` appends to the instance's durable event stream (read with
`Client.events`), and `wf.query(name, handler)` answers `Client.query` from the state a
replay of the recorded journal reaches, running nothing new.

Two rules. Between steps, the function must make the same decisions every time: it runs
from the top in every event, and anything that varies (reads, HTTP) belongs inside a
step, or, for the time and randomness, comes from `wf.now()`, `wf.random()` and
`wf.uuid()`, which record it. And a step may run more than once (its result is recorded
after it returns): make it idempotent, or pass `step_keyed`'s key to the service it calls.
Code changed under live instances branches on `wf.patched(change_id)`. A step given
`tx=True` (or `tx=Tables(...)`) writes the instance's own tables through the handle its
function gets, in one transaction with the step's recorded result. `wf.all`,
`wf.all_settled` and `wf.any` run branches together (`Step`, `Sleep`, `Wait`, `Child`);
`wf.child(cls, id, input)` runs a child workflow; `compensate=` gives a step its undo,
run newest first when the workflow fails (a saga). Steps take `limit`, `delay` (a
duration, or a function of the error), `backoff` and `timeout`; durations are ints of
milliseconds or strings such as "10 seconds" (`wf.sleep("cool-off", "1 minute")`).

The package's layout (a core, and one subpackage per feature) is in
docs/architecture.md. What it exports is what workflows are written with. Its other
public modules, for libraries over it (wkguest.schedule, wkguest.cloudflare: a contract
in pyproject.toml holds them to these) and for tests:
- `wkguest.workflow.extend`: what a library asks of a `Run` beyond `wf.`'s calls (the
  instance's id and creation time, a position's attempts and state, parking the
  instance for a mistake in the code);
- `wkguest.workflow.errors`: the whole exception tree, with `CborError` and the runner's
  own signals, `Suspend` and `StoreFault`;
- `wkguest.workflow.backend`: `Backend` (the host's SQL, alarm, clock and calls, as the
  runner sees them), and `wkguest.workflow.real_backend`: `RealBackend`;
- `wkguest.workflow.client`, `wkguest.workflow.status` and `wkguest.workflow.cbor`: the
  client, what it reads, and the wire's encoding;
- `wkguest.workflow.runner.Runner` and `wkguest.workflow.protocol.Protocol`: the runner
  and its routes, put together;
- `wkguest.workflow.testing`: the fakes, a test host and recorded histories (imported
  only on demand).
`core/` and the features' subpackages are not public.
"""

from __future__ import annotations

from .children.awaited import AwaitedFailed, AwaitTimedOut
from .children.calls import ChildFailed, ChildHandle
from .client import Client, Transport
from .core.attempt import StepResult
from .core.config import Config, Retry
from .core.context import StepContext
from .core.timeouts import StepTimedOut
from .core.tx import Tables, TxDb, TxRefused
from .errors import (
    CodeError,
    ContinueAsNew,
    Fail,
    JournalError,
    NonRetryable,
    Reordered,
    StepFailed,
    UnsupportedValue,
    ValueTooLarge,
    WorkflowError,
    WorkflowSignal,
)
from .groups.branches import Child, Sleep, Step, Wait, Won
from .run import Run
from .runner import Workflow
from .saga.compensations import Compensation
from .serve import serve
from .status import FINISHED_STATES, STATES, Event, Status, Update

__all__ = [
    "FINISHED_STATES",
    "STATES",
    "Child",
    "AwaitTimedOut",
    "AwaitedFailed",
    "ChildFailed",
    "ChildHandle",
    "Client",
    "CodeError",
    "Compensation",
    "Config",
    "ContinueAsNew",
    "Event",
    "Fail",
    "JournalError",
    "NonRetryable",
    "Reordered",
    "Retry",
    "Run",
    "Sleep",
    "Status",
    "Step",
    "StepContext",
    "StepFailed",
    "StepResult",
    "StepTimedOut",
    "Tables",
    "Transport",
    "TxDb",
    "TxRefused",
    "UnsupportedValue",
    "Update",
    "ValueTooLarge",
    "Wait",
    "Won",
    "Workflow",
    "WorkflowError",
    "WorkflowSignal",
    "serve",
]
