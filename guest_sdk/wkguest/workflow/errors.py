"""Exceptions of the workflow runner and its client.

    BaseException
    ├── WorkflowSignal        the runner's own control flow: never catch it (nor BaseException)
    │   ├── Suspend           "stop here": the run waits (a sleep, an event, a backoff, the budget)
    │   ├── Reordered         the code reached another step than the recorded one (parks
    │   │                     the instance: "the code changed the order of its steps")
    │   ├── StoreFault        a database or alarm call of the runner failed (retried, never a
    │   │                     failed workflow)
    │   ├── JournalError      a recorded entry this runner cannot read (parks the instance;
    │   │                     met in the warm cache, it is read again from the database first)
    │   ├── CodeError         a mistake in the workflow's code that the runner refuses: an
    │   │                     unknown or ill-typed step option, a negative duration (parks
    │   │                     the instance at once, naming it: retrying cannot fix code)
    │   └── ContinueAsNew     `wf.continue_as_new(input)`: end this run, begin a fresh one
    └── Exception
        ├── NonRetryable      raise it from a step's function: no more attempts
        │   └── Fail          raise it (or call `wf.fail`) to fail the workflow on purpose
        ├── StepFailed        `wf.step` ran out of attempts; catch it to handle the error
        ├── WorkflowError     the client's error: kind unknown | finished | call |
        │                     not-a-workflow | no-query | refused
        └── ValueError
            ├── UnsupportedValue  a value outside the documented types (`core/values.py`)
            ├── ValueTooLarge     an encoded value over `Config.max_value_bytes`
            └── CborError         malformed or unsupported CBOR

The signals derive from BaseException so that a workflow's `except Exception:` around a
step cannot swallow "stop here" and carry on as if the step had returned.

Parked, not failed: Reordered, JournalError and CodeError are failures of the deploy or
of the code, not of the workflow, so they park the instance (runner.py): unfinished, its
journal as recorded, running nothing until an operator moves it. Only the workflow's own
failures (StepFailed uncaught, Fail) fail it.
"""

from __future__ import annotations

from typing import Literal

ErrorKind = Literal["unknown", "finished", "call", "refused", "not-a-workflow", "no-query",
                    "exists", "no-update", "update-rejected", "update-failed",
                    "update-pending"]

# What the host says when a class does not declare the workflow protocol (wkhost's
# NotThatProtocol). Inside an actor a call's kind tells it ("not-declared": CallError,
# CallFailed); the front door's answer to `wkhost workflow` names it in its
# `wk-error-kind` header, which the CLI reads (host/cli/client.py): none reads the words.
NOT_DECLARED = "does not declare the protocol"


class WorkflowSignal(BaseException):
    """Base of the runner's control flow. User code must let it through."""


class ContinueAsNew(WorkflowSignal):
    """`wf.continue_as_new(input)`: the run ends here and the instance begins a new run
    with `input` and an empty journal (runner.py)."""

    def __init__(self, input: object) -> None:
        super().__init__("continue as new")
        self.input = input


class Suspend(WorkflowSignal):
    """The run stops at this position. `wake_at` is when the alarm should bring it back
    (None: no time of its own), `waiting_for` the event name it waits for, if any."""

    def __init__(self, state: str, wake_at: int | None, waiting_for: str | None = None) -> None:
        super().__init__(f"{state} until {wake_at}")
        self.state = state
        self.wake_at = wake_at
        self.waiting_for = waiting_for


class Reordered(WorkflowSignal):
    """A recorded position was reached by a different step: the code changed."""


class StoreFault(WorkflowSignal):
    """The runner's own storage call failed; the event ends and is retried."""


class JournalError(WorkflowSignal):
    """A recorded entry is not readable by this runner (say, written by a newer SDK)."""


class CodeError(WorkflowSignal):
    """A primitive was called in a way that can never work (see the tree above)."""


class NonRetryable(Exception):
    """Raised by a step's function: the step fails at once, without more attempts."""


class Fail(NonRetryable):
    """Fails the workflow with this message. Raised inside a step's function, it is a
    NonRetryable step error (and fails the workflow unless the workflow handles it)."""


class StepFailed(Exception):
    """A step ran out of attempts (or raised NonRetryable). Uncaught, it fails the workflow;
    on replay the recorded error is raised again, identically."""

    def __init__(self, name: str, position: int, error: str, attempts: int) -> None:
        super().__init__(f"step {name!r} failed after {attempts} attempt(s): {error}")
        self.name = name
        self.position = position
        self.error = error
        self.attempts = attempts


class WorkflowError(Exception):
    """A client call failed.

    kind: "unknown" (no such instance: never started, or past its retention),
    "finished" (an event to a finished instance), "call" (the call itself failed: the
    instance may or may not have recorded it), "not-a-workflow" (the class is not a
    workflow class: the host ran none of its code), "no-query" (a query of a name the
    workflow does not register), "refused" (any other answer; see `status`), "exists"
    (the Cloudflare-shaped binding's create of an id that is taken: wkguest.cloudflare).
    Updates (`Client.update`, `Update.value`): "no-update" (the workflow registers no
    handler of that name where it is), "update-rejected" (its validator refused it:
    nothing was recorded), "update-failed" (its handler raised, or the instance finished
    first), "update-pending" (not ended yet: ask again with its id, `update_id`).
    """

    def __init__(self, kind: ErrorKind, message: str, status: int | None = None) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind: ErrorKind = kind
        self.message = message
        self.status = status
        self.update_id: str | None = None  # "update-pending": the id to ask again with


class UnsupportedValue(ValueError):
    """A value (or a part of it) is not one of the supported types."""


class ValueTooLarge(ValueError):
    """An encoded value is over the configured limit; the message names it."""


class CborError(ValueError):
    """Malformed CBOR, or CBOR outside the subset this protocol uses."""
