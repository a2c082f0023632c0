"""Whether a schedule's target is a workflow class served here, asked when it is created.

A create is refused, with nothing recorded, if the class is not served or is not a
workflow class: taken, its every fire would be retried, or fail, for as long as the
schedule lives. The schedule asks the class itself, with the workflow protocol's
`status` of the first instance it would start: the host delivers a call that names the
protocol only to a class whose component declares it, and refuses one to a class it
does not serve, both before any of the class's code runs. A workflow class answers
(an instance never started leaves nothing behind), whatever its answer says.

The check is in the schedule class, so every way to create a schedule gets it: the CLI,
an operator's HTTP request, another actor's call.
"""

from __future__ import annotations

from typing import NamedTuple

from ..workflow import cbor
from ..workflow.backend import Backend, CallFailed
from ..workflow.status import PREFIX

__all__ = ["NOT_SERVED", "Refusal", "check"]

NOT_SERVED = "not-served"


class Refusal(NamedTuple):
    status: int
    kind: str
    message: str


def check(db: Backend, cls: str, probe_id: str) -> Refusal | None:
    """None if `cls` is a workflow class served here; else why the create is refused.
    `probe_id`: the instance whose status is asked (the first the schedule would start)."""
    try:
        db.call(cls, probe_id, "POST", PREFIX + "status", cbor.dumps({}))
    except CallFailed as e:
        return _refusal(cls, e)
    return None


def _refusal(cls: str, e: CallFailed) -> Refusal:
    if e.kind == "unknown-class":
        return Refusal(400, NOT_SERVED, f"target {cls!r} is not served here (no class "
                       "of that name); nothing was recorded")
    if e.kind == "not-declared":
        return Refusal(400, "not-a-workflow", f"target {cls!r} is not a workflow class "
                       f"({e}); nothing was recorded")
    return Refusal(503, "target-unchecked", f"target {cls!r} could not be checked: "
                   f"{e}; nothing was recorded, try again")
