"""Waiting for another workflow's result, not a child's: `wf.wait_for_workflow`.

    invoice = wf.wait_for_workflow("orders", order_id, timeout="1 day")

Two positions, fixed by the code. The first, `watch CLS/ID`, a step-like attempt: a call
of the other instance's watch route (routes.py), which answers its end at once if it has
finished, or notes this instance as a watcher (watchers.py) that it will tell at its end,
with the notice a child gives its parent (notices.py). The second, only if it had not
finished, a wait for that notice, `workflow CLS/ID`, with the timeout given. Not polled: the
awaited instance's end wakes this one.

What it comes to: the other instance's output; `AwaitedFailed` if it failed, was
cancelled or terminated, or cannot be awaited: no such instance (never started, or past
its retention: its state "unknown"), a class that is not a workflow ("not a workflow"),
or this instance itself; `AwaitTimedOut` once the timeout has passed first. Both are
StepFailed: uncaught, they fail this workflow as a failed step does. A continue-as-new
of the awaited instance is not its end: the watcher is told when its last run ends.
"""

from __future__ import annotations

from typing import Any

from ...durations import Duration
from .. import cbor
from ..backend import Backend
from ..core import attempt
from ..core.cursor import Cursor
from ..core.kinds import STEP, WAIT
from ..core.moments import check_duration
from ..core.values import check_name, decode
from ..errors import NonRetryable, StepFailed
from .calls import call_route, child_outcome
from .registry import watch_event

__all__ = ["AwaitTimedOut", "AwaitedFailed", "wait_for_workflow"]


class AwaitedFailed(StepFailed):
    """The awaited workflow failed, was cancelled or terminated, or cannot be awaited.
    `cls`, `id`: the instance; `state`: "failed", "cancelled", "terminated", "unknown"
    or "not a workflow"; `error`: its error, or why it cannot be awaited."""

    def __init__(self, cls: str, id: str, state: str, error: str, position: int) -> None:
        Exception.__init__(self, f"workflow {cls}/{id} {state}: {error}")
        self.name = f"watch {cls}/{id}"
        self.position, self.error, self.attempts = position, f"{state}: {error}", 0
        self.cls, self.id, self.state = cls, id, state


class AwaitTimedOut(AwaitedFailed):
    """The timeout passed before the awaited workflow finished (it runs on)."""


def wait_for_workflow(run: Cursor, cls: str, id: str, timeout: Duration) -> Any:
    """Instance `id` of workflow class `cls`'s output once it has finished (see the
    module's doc)."""
    what = f"wf.wait_for_workflow({cls!r}, {id!r})"
    try:
        check_name(cls, "a workflow's class")
        check_name(id, "a workflow's id")
        ms = check_duration(timeout, f"{what}: the timeout")
    except (TypeError, ValueError) as e:
        run.refuse(f"{what}: {e}")
    front = run.frontier
    if tuple(front.db.self_ref()) == (cls, id):
        run.refuse(f"{what}: a workflow cannot wait for itself")
    pos, name = run.enter(), f"watch {cls}/{id}"
    if run.recorded(pos):
        out = run.replay(pos, STEP, name)
    else:
        out = run.new(pos, lambda: attempt.step(front, pos, name,
                                                lambda: _watch(front.db, cls, id), run.retry))
    ok, watched, error, _ = out
    if not ok:
        state = "not a workflow" if "not a workflow class" in (error or "") else "unknown"
        raise AwaitedFailed(cls, id, state, error or "", pos)
    payload = watched
    if not watched.get("finished"):
        pos = run.enter()
        event = watch_event(cls, id)
        payload = run.replay(pos, WAIT, event) if run.recorded(pos) else \
            run.new(pos, lambda: front.wait(pos, event, ms))
        if payload is None:
            raise AwaitTimedOut(cls, id, "timed out", f"it had not finished after "
                                f"{ms} ms", pos)
    done, output, failure = child_outcome(payload)
    if not done:
        state, _, why = (failure or "failed").partition(": ")
        raise AwaitedFailed(cls, id, state, why or state, pos)
    return output


def _watch(db: Backend, cls: str, id: str) -> dict[str, Any]:
    """One attempt of the watch: the instance's end, decoded, if it has finished
    ({"finished": True, "state", "output", "error"}), else {"finished": False}. Raises
    NonRetryable if it cannot be awaited, another Exception for a call to retry."""
    me = db.self_ref()
    doc = call_route(db, cls, id, "watch", cbor.dumps({"cls": me[0], "id": me[1]}),
                     f"workflow {cls}/{id}")
    if doc.get("finished") is not True:
        return {"finished": False}
    output = doc.get("output")
    tagged = doc.get("tagged") is True
    if output is not None and not isinstance(output, str):
        raise NonRetryable(f"workflow {cls}/{id}: its watch answered an output that is not "
                           "stored JSON text")
    return {"finished": True, "state": doc.get("state"), "error": doc.get("error"),
            "output": None if output is None else decode(output, tagged)}
