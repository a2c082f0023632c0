"""The exceptions of the Cloudflare-shaped API, as Cloudflare names them.

    NonRetryableError     raise it in a step's function: the step fails at once, with no
                          more retries; escaping `run()`, it fails the instance (errored)
    WorkflowTimeoutError  `step.wait_for_event` raises it when its timeout passes first
    WorkflowError         the binding's error (wkguest.workflow's): kind "exists" for a
                          create whose id is taken, "unknown" for a get of no instance, ...

Any exception escaping `run()` fails the instance, as on Cloudflare (entrypoint.py).
"""

from __future__ import annotations

from wkguest.workflow.errors import NonRetryable, WorkflowError

EXISTS = "exists"


class NonRetryableError(NonRetryable):
    """Raised in a step's function: the step fails at once (no more retries). Escaping
    `run()` it fails the instance, like any other exception."""


class WorkflowTimeoutError(Exception):
    """`step.wait_for_event` passed its timeout before an event of its type came."""


def exists(id: str) -> WorkflowError:
    """The error of a create whose id is taken (Cloudflare's: the id exists), kind
    "exists"."""
    return WorkflowError("exists", f"instance {id!r} exists", 409)


__all__ = ["EXISTS", "NonRetryableError", "WorkflowError", "WorkflowTimeoutError", "exists"]
