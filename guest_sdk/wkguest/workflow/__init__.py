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

Modules: `run` (the Run API and the replay core), `helpers` (wf.now, random, uuid and
patched), `recorded` (what they record), `frontier` (new positions), `journal`
(the cached journal), `runner` (on_alarm), `protocol` (the routes), `client`, `status`,
`store` (all SQL), `tx` (a step's own SQL, committed with its result) and `sqlscan`
(its checks of that SQL), `values` (value types and encoding), `cbor`, `config`, `backend`,
`errors` (the exception tree), `serve`, `emit` (wf.emit and wf.query), `stream` (the
emitted events' SQL), `dry` (the dry replay that answers queries), `reads` (the events and
query routes), `group`, `groupfront`, `branches` and `branchstore` (wf.all and its
kin: the calls, the turns of the branches, the branch descriptors, their SQL), `child`,
`kin` and `family` (child workflows: the calls, the tables, the notices and cancels
owed), `saga` and `cancelling` (compensation, and a cancel with it), `ops` and `rewind`
(an operator's moves: terminate, pause, resume, rescue, restart, and their SQL),
`attempts` (each attempt's history), `retry` (the retry policy and its arithmetic),
`policy` (step options into a retry policy, and
the wait after a failed attempt), `timeouts` (a step's timeout per attempt), `context`
(StepContext, `wf.step_context`), `when` (the durations and times sleeps and waits
take; wkguest.durations parses the strings), `publish` (the state, for the host's listing),
`readonly` (the database a dry replay reads), and `testing` (fakes, a test host, replaying
recorded histories, and the replay benchmark; imported only on demand).
"""

from __future__ import annotations

from .children.calls import ChildFailed, ChildHandle
from .client import Client, Transport
from .core.backend import Backend, RealBackend
from .core.config import Config, Retry
from .core.context import StepContext
from .core.timeouts import StepTimedOut
from .core.tx import Tables, TxDb, TxRefused
from .errors import (
    CborError,
    CodeError,
    ContinueAsNew,
    Fail,
    JournalError,
    NonRetryable,
    Reordered,
    StepFailed,
    StoreFault,
    Suspend,
    UnsupportedValue,
    ValueTooLarge,
    WorkflowError,
    WorkflowSignal,
)
from .groups.branches import Child, Sleep, Step, StepResult, Wait, Won
from .protocol import Protocol, Reply
from .run import Run
from .runner import Runner, Workflow
from .saga.compensations import Compensation
from .serve import serve
from .status import FINISHED_STATES, STATES, Event, Status

__all__ = [
    "FINISHED_STATES",
    "STATES",
    "Backend",
    "CborError",
    "Child",
    "ChildFailed",
    "ChildHandle",
    "Client",
    "Config",
    "Fail",
    "CodeError",
    "Compensation",
    "ContinueAsNew",
    "Event",
    "JournalError",
    "NonRetryable",
    "Protocol",
    "RealBackend",
    "Reordered",
    "Reply",
    "Retry",
    "Run",
    "Runner",
    "Sleep",
    "Status",
    "Step",
    "StepFailed",
    "StepContext",
    "StepResult",
    "StepTimedOut",
    "StoreFault",
    "Suspend",
    "Tables",
    "Transport",
    "TxDb",
    "TxRefused",
    "UnsupportedValue",
    "ValueTooLarge",
    "Wait",
    "Won",
    "Workflow",
    "WorkflowError",
    "WorkflowSignal",
    "serve",
]
