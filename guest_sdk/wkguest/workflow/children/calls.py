"""Child workflows: `wf.child(cls, id, input)`, and `wf.spawn` with `wf.join`.

    receipt = wf.child("payments", f"pay-{order_id}", {"amount": 42})  # start, then wait
    h = wf.spawn("shipping", f"ship-{order_id}", {...})                 # start only
    ...
    label = wf.join(h)                                                  # wait for it

A child is an instance of any workflow class, started by the parent with a call to it
(the start route, carrying the parent) and waited for without polling: the child tells
its parent when it finishes (notices.py), and the parent's wait consumes that notice.

Two positions per child, fixed by the code: the start, a step-like attempt named
`child CLS/ID` (a failed call is retried with the Config's backoff; a mismatch is not),
and the wait for the child's notice, a wait of the same name without a timeout. Both are
ordinary journal entries (a step, a wait), so old runners read such a journal too.

The rules: a child id names one child of a parent. Starting it again from another
position, or as another class, or finding an instance of that id that another parent (or
a client) started or that has another input, is an error naming both, never a silent
reuse (ChildFailed, "not started"). A child that fails or is cancelled raises ChildFailed
in the parent at its wait; uncaught, it fails the parent as a failed step would.
"""

from __future__ import annotations

from typing import Any

from .. import cbor
from ..backend import Backend, CallFailed
from ..core import attempt
from ..core.cursor import Cursor
from ..core.frontier import Frontier
from ..core.kinds import STEP, WAIT, WAITING, Pending, shown
from ..core.values import check_name
from ..errors import CborError, NonRetryable, StepFailed, Suspend
from ..status import PREFIX
from .notices import send_cancel
from .registry import Registry, notice_event

# The wait for a notice has no timeout; a far deadline stands in for "never".
FOREVER_MS = 100 * 365 * 86_400_000
_FAR = 2**62  # any notice received, whenever
NOT_STARTED = "not started"

__all__ = ["ChildFailed", "ChildHandle", "call_route", "cancel_child", "child",
           "child_outcome", "join", "notice_event", "shown", "spawn", "start_child"]


class ChildFailed(StepFailed):
    """A child workflow failed, was cancelled, or could not be started. A StepFailed: an
    uncaught one fails the parent as a failed step does (and a saga compensates for it).

    `cls`, `id`: the child; `state`: "failed", "cancelled" or "not started"; `error`:
    the child's error (or why it could not be started)."""

    def __init__(self, cls: str, id: str, error: str, position: int) -> None:
        Exception.__init__(self, f"child {cls}/{id} {error}")
        self.name = f"child {cls}/{id}"
        self.position = position
        self.error = error
        self.attempts = 0
        self.cls, self.id = cls, id
        self.state = error.split(":", 1)[0]


class ChildHandle:
    """What `wf.spawn` returns: the child's class, id, whether detached, and the
    position of its start. Pass it to `wf.join`, once."""

    __slots__ = ("cls", "id", "detached", "position", "joined")

    def __init__(self, cls: str, id: str, detached: bool, position: int) -> None:
        self.cls, self.id, self.detached, self.position = cls, id, detached, position
        self.joined = False

    def __repr__(self) -> str:
        return f"ChildHandle({self.cls!r}, {self.id!r})"


def child(run: Cursor, cls: str, id: str, input: Any, detach: bool) -> Any:
    """Start child `id` of workflow class `cls` with `input` (idempotently) and wait for
    it: its output, or ChildFailed (failed, cancelled, or not started). Two positions:
    the start and the wait. `detach`: a cancel of this workflow leaves the child running
    (by default it cancels it)."""
    return join(run, spawn(run, cls, id, input, detach))


def spawn(run: Cursor, cls: str, id: str, input: Any, detach: bool) -> ChildHandle:
    """Start the child as `child` does, without waiting: a handle for `wf.join`. Raises
    ChildFailed if it could not be started (after the start's attempts)."""
    pos = run.enter()
    name = _checked(run, cls, id, detach)
    if run.recorded(pos):
        out = run.replay(pos, STEP, name)
    else:
        front, retry = run.frontier, run.retry
        out = run.new(pos, lambda: attempt.step(
            front, pos, name, lambda: start_child(front.db, cls, id, input, detach), retry))
    ok, _, error, _n = out
    if not ok:
        raise ChildFailed(cls, id, f"{NOT_STARTED}: {error}", pos)
    return ChildHandle(cls, id, detach, pos)


def join(run: Cursor, handle: ChildHandle) -> Any:
    """Wait for a spawned child: its output, or ChildFailed (failed or cancelled)."""
    pos = run.enter()
    h: object = handle
    if not isinstance(h, ChildHandle) or h.joined:
        what = "joined already" if isinstance(h, ChildHandle) else "not a ChildHandle"
        run.refuse(f"wf.join({h!r}): {what} (join each spawn once)")
    handle.joined = True
    name = notice_event(handle.cls, handle.id)
    if run.recorded(pos):
        payload = run.replay(pos, WAIT, name)
    else:
        front = run.frontier
        payload = run.new(pos, lambda: _wait_notice(front, pos, name))
    ok, output, error = child_outcome(payload)
    if not ok:
        raise ChildFailed(handle.cls, handle.id, error or "failed", pos)
    return output


def _wait_notice(front: Frontier, pos: int, name: str) -> Any:
    """The child's notice, as `front.wait` takes it with no timeout. Reached for the
    first time with no notice there, its pending entry is a plain write, not a durable
    one: the run's end that follows (the state changes to waiting) is durable and syncs
    it, so a child's round trip costs one fsync less. Anything else is front.wait's."""
    p = front.pending
    if (p is not None and p.pos == pos) or front.store.oldest_event(name, _FAR) is not None:
        return front.wait(pos, name, FOREVER_MS)
    now = front.db.now()
    deadline = now + FOREVER_MS
    Registry(front.db).put_waiting(pos, name, deadline, now)
    front.unsynced = True  # the run's end syncs it, whatever its state says
    front.pending = Pending(pos, WAITING, name, 0, None, deadline, None)
    raise Suspend("waiting", deadline, name)


def _checked(run: Cursor, cls: object, id: object, detach: object) -> str:
    try:
        check_name(cls, "a child's class")
        check_name(id, "a child's id")
        if not isinstance(detach, bool):
            raise TypeError(f"detach must be True or False, not {detach!r}")
    except (TypeError, ValueError) as e:
        run.refuse(f"wf.child({cls!r}, {id!r}): {e}")
    return notice_event(str(cls), str(id))


# -- the interface of the child machinery (groups/calls.py uses it too) ------------------------

def start_child(db: Backend, cls: str, id: str, input: Any, detach: bool) -> None:
    """One attempt to start child `cls`/`id` with the parent = db.self_ref(); registers
    it in the parent's registry. Raises NonRetryable on a mismatch (another class under
    that id, the id used by another position, an instance of another parent or input),
    another Exception for a call that failed (the caller retries it like a step's)."""
    known, here = Registry(db).register(id, cls, detach)
    if known != cls:
        raise NonRetryable(f"child id {id!r} is a child of class {known!r} already: it "
                           f"cannot also be one of class {cls!r}")
    if not here:
        raise NonRetryable(f"child {cls}/{id} was started by another position of this "
                           "workflow: each child needs an id of its own")
    me = db.self_ref()
    try:
        body = cbor.dumps({"input": input, "parent": {"cls": me[0], "id": me[1]},
                           "detached": detach})
    except CborError as e:
        raise NonRetryable(f"child {cls}/{id}: its input cannot be sent: {e}") from None
    doc = call_route(db, cls, id, "start", body)
    if doc.get("created") is True:
        return
    parent = doc.get("parent")
    if parent != {"cls": me[0], "id": me[1]}:
        by = (f"workflow {parent.get('cls')}/{parent.get('id')}" if isinstance(parent, dict)
              else "a client")
        raise NonRetryable(f"{cls}/{id} exists already, started by {by}, not by this "
                           f"workflow {me[0]}/{me[1]}: a child's id must be its own")
    if doc.get("input_differs") is True:
        raise NonRetryable(f"child {cls}/{id} exists with the input {doc.get('input')!r}, "
                           f"not {input!r}: a child's id names one input")


def call_route(db: Backend, cls: str, id: str, route: str, body: bytes,
               what: str | None = None) -> dict[str, Any]:
    """A wk-workflow/v1 call to `cls`/`id` (`what` it is to this one, for its errors: by
    default its child): its answer's map. Raises NonRetryable for an answer that
    retrying cannot change (not a workflow class, a refused request)."""
    try:
        status, out = db.call(cls, id, "POST", PREFIX + route, body)
    except CallFailed as e:
        if e.kind == "not-declared":
            raise NonRetryable(f"class {cls!r} is not a workflow class ({e})") from None
        raise
    try:
        doc = cbor.loads(out) if out else None
    except CborError:
        doc = None
    msg = doc.get("message") if isinstance(doc, dict) else out[:200].decode("utf-8", "replace")
    if status == 200 and isinstance(doc, dict):
        return doc
    error = f"{what or f'child {cls}/{id}'}: {route} answered {status}: {msg}"
    if status in (400, 403, 404, 405, 413):
        raise NonRetryable(error)
    raise RuntimeError(error)


def child_outcome(payload: Any) -> tuple[bool, Any, str | None]:
    """A notice's payload (as taken from the event) → (ok, output, error): error is
    "failed: <the child's error>" or "cancelled"."""
    if not isinstance(payload, dict):
        return False, None, f"failed: no notice of the child's end ({payload!r})"
    state = payload.get("state")
    if state == "completed":
        return True, payload.get("output"), None
    error = payload.get("error")
    return False, None, f"{state}: {error}" if error else str(state)


def cancel_child(db: Backend, cls: str, id: str) -> None:
    """The parent no longer wants child `cls`/`id`: cancel it. Owed durably first; sent
    at once if the call can be made now, else by the parent's drain when it finishes."""
    registry = Registry(db)
    if registry.owe_cancel(id, cls):
        send_cancel(db, registry, id, cls, 0, db.now())
