"""What clients see: `Status`, and turning protocol answers into values or WorkflowError.

Shared by the guest `Client` and the host's `wkhost.cli.client`: both speak
wk-workflow/v1 (docs/workflow-protocol.md) and differ only in transport.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .errors import WorkflowError

STATES = ("running", "waiting", "completed", "failed", "cancelled", "parked", "compensating",
          "paused", "terminated")
# Terminated: an operator stopped it at once, running no compensation (operator/moves.py).
FINISHED_STATES = frozenset({"completed", "failed", "cancelled", "terminated"})
# Where an instance rests: nothing of its own moves it on. A finished one, or a parked one:
# stopped by a failure that is not the workflow's own (a reordered deploy, a value that no
# longer decodes, runs that keep ending without returning, a mistake in the code), kept
# unfinished until an operator moves it. Or a paused one: an operator's pause holds it
# (operator/moves.py) until a resume. A wait for the end (`wait_ms`) ends at any of them.
RESTING_STATES = FINISHED_STATES | {"parked", "paused"}
PREFIX = "/wk-workflow/v1/"
CONTENT_TYPE = "application/cbor"
# What a class made by `serve` answers. `wkhost build` finds a module-level `serve(...)`
# in the app and declares this in the component (host/engine/), so that the host knows a
# workflow class without running any of its code; every call to a workflow class says it.
PROTOCOL = "wk-workflow/v1"


@dataclass(frozen=True)
class Status:
    """An instance's state as its runner reported it.

    state: one of STATES ("compensating": running the compensations of its completed
    steps, after its own failure or a cancel with compensation; "paused": an operator
    paused it, it starts no new work until resumed; "terminated": an operator stopped it
    at once, no compensation run). wake_at: when its alarm
    next runs it (ms, host clock), or None.
    waiting_for: the event names it waits for. output: the workflow's return value (None
    unless completed). error: why it failed (or, while running, why its last run did not
    end cleanly; while parked, why it parked). positions: how many positions are recorded.
    run_id: this run's id (a new start after retention gets a new one, and so does each
    continue-as-new). parked_at: when it parked (None unless parked). runs: how many runs
    the instance has begun (1, until it continues as new); previous_run_id: the run before
    this one (None for the first). paused_at: when it was paused (None unless paused).
    held_by: who holds the instance now, as the host names it ("process 2 of 4 (pid
    1234)"), when the host says. updates_pending: updates accepted and not yet taken
    (`wf.on_update`).
    """

    state: str
    wake_at: int | None = None
    waiting_for: tuple[str, ...] = ()
    output: Any = None
    error: str | None = None
    positions: int = 0
    run_id: str = ""
    # For the answer to a start: whether it made the instance, and, for one that already
    # existed, whether the start's input differs from the instance's (it was ignored).
    created: bool = False
    input_differs: bool = False
    parked_at: int | None = None
    runs: int = 1
    previous_run_id: str | None = None
    paused_at: int | None = None
    held_by: str | None = None
    updates_pending: int = 0  # accepted updates the workflow has not taken yet
    events_pending: int = 0  # events received that no wait has taken yet
    update: Update | None = None  # an update-with-start's: how its update stands

    @property
    def is_finished(self) -> bool:
        return self.state in FINISHED_STATES

    @property
    def is_parked(self) -> bool:
        """Stopped by a failure that is not the workflow's own; not finished (see
        RESTING_STATES): it runs nothing until an operator moves it."""
        return self.state == "parked"

    @property
    def is_paused(self) -> bool:
        """Paused by an operator: it starts no new work until resumed (not finished)."""
        return self.state == "paused"

    @property
    def is_resting(self) -> bool:
        """Finished, parked or paused: nothing of its own moves it on."""
        return self.state in RESTING_STATES

    @classmethod
    def from_map(cls, m: Any) -> Status:
        """A status map of the protocol → Status. Raises WorkflowError("refused")."""
        if not isinstance(m, dict) or m.get("state") not in STATES:
            raise WorkflowError("refused", f"malformed status: {m!r}"[:300], 200)
        waiting = m.get("waiting_for") or []
        return cls(
            state=m["state"],
            wake_at=_opt_int(m.get("wake_at")),
            waiting_for=tuple(str(w) for w in waiting),
            output=m.get("output"),
            error=m.get("error"),
            positions=_opt_int(m.get("positions")) or 0,
            run_id=str(m.get("run_id", "")),
            created=m.get("created") is True,
            input_differs=m.get("input_differs") is True,
            parked_at=_opt_int(m.get("parked_at")),
            runs=_opt_int(m.get("runs")) or 1,
            previous_run_id=_opt_str(m.get("previous_run_id")),
            paused_at=_opt_int(m.get("paused_at")),
            held_by=_opt_str(m.get("held_by")),
            updates_pending=_opt_int(m.get("updates_pending")) or 0,
            events_pending=_opt_int(m.get("events_pending")) or 0,
            update=Update.from_answer(m) if "update" in m else None,
        )


@dataclass(frozen=True)
class Update:
    """An update as the instance answers for it (the update route).

    state: "accepted" (waiting for the workflow to take it), "taken" (its handler runs),
    "completed" (`result` is its handler's answer) or "failed" (`error` says why: its
    handler raised, or the instance finished first). position: where the workflow took
    it. An update the validator refused has no state: the call raised update-rejected."""

    id: str
    name: str
    state: str
    result: Any = None
    error: str | None = None
    position: int | None = None
    run_id: str | None = None
    accepted_at: int | None = None
    done_at: int | None = None

    @property
    def done(self) -> bool:
        return self.state in ("completed", "failed")

    def value(self) -> Any:
        """The handler's answer. Raises WorkflowError: "update-failed", or
        "update-pending" (not ended yet: its `update_id` asks again)."""
        if self.state == "completed":
            return self.result
        if self.state == "failed":
            raise WorkflowError("update-failed", f"update {self.name!r} failed: "
                                f"{self.error}")
        e = WorkflowError("update-pending", f"update {self.name!r} ({self.id}) is "
                          f"{self.state}, not ended yet: ask again with its id")
        e.update_id = self.id
        raise e

    @classmethod
    def from_answer(cls, doc: Any) -> Update:
        """The update route's answer → Update. Raises WorkflowError("refused")."""
        m = doc.get("update") if isinstance(doc, dict) else None
        if not (isinstance(m, dict) and isinstance(m.get("id"), str)
                and isinstance(m.get("name"), str) and isinstance(m.get("state"), str)):
            raise WorkflowError("refused", f"malformed update answer: {doc!r}"[:300], 200)
        return cls(id=m["id"], name=m["name"], state=m["state"], result=m.get("result"),
                   error=_opt_str(m.get("error")), position=_opt_int(m.get("position")),
                   run_id=_opt_str(m.get("run_id")), accepted_at=_opt_int(m.get("accepted_at")),
                   done_at=_opt_int(m.get("done_at")))


@dataclass(frozen=True)
class Event:
    """An event of an instance's emitted stream (`wf.emit`): its offset in the stream
    (0, 1, 2, ...), name, payload, when it was emitted (ms, host clock), and the run and
    position that emitted it."""

    offset: int
    name: str
    payload: Any
    at: int
    pos: int
    run_id: str

    @classmethod
    def from_map(cls, m: Any) -> Event:
        """An event map of the `events` route → Event. Raises WorkflowError("refused")."""
        if not isinstance(m, dict) or not isinstance(m.get("name"), str):
            raise WorkflowError("refused", f"malformed event: {m!r}"[:300], 200)
        return cls(offset=_int(m.get("offset")), name=m["name"], payload=m.get("payload"),
                   at=_int(m.get("at")), pos=_int(m.get("pos")),
                   run_id=str(m.get("run_id", "")))


def events_of(doc: Any) -> list[Event]:
    """The events of an `events` answer. Raises WorkflowError("refused")."""
    got = doc.get("events") if isinstance(doc, dict) else None
    if not isinstance(got, list):
        raise WorkflowError("refused", f"malformed events answer: {doc!r}"[:300], 200)
    return [Event.from_map(m) for m in got]


def _int(v: Any) -> int:
    got = _opt_int(v)
    if got is None:
        raise WorkflowError("refused", "malformed event: a field is missing", 200)
    return got


def _opt_int(v: Any) -> int | None:
    if v is None or (isinstance(v, int) and not isinstance(v, bool)):
        return v
    raise WorkflowError("refused", f"malformed status field: {v!r}"[:300], 200)


def _opt_str(v: Any) -> str | None:
    if v is None or isinstance(v, str):
        return v
    raise WorkflowError("refused", f"malformed status field: {v!r}"[:300], 200)


def check_answer(status: int, doc: Any, body_text: str = "") -> Any:
    """A runner's answer → its message, or WorkflowError with the protocol's kinds:
    404 "unknown" → unknown, 409 "finished" → finished, 404 "no-query" → no-query, any
    other non-200 → refused."""
    if status == 200 and isinstance(doc, dict):
        return doc
    kind = doc.get("error") if isinstance(doc, dict) else None
    message = doc.get("message") if isinstance(doc, dict) else None
    message = str(message or body_text.strip() or f"status {status}")[:500]
    if status == 404 and kind == "unknown":
        raise WorkflowError("unknown", message, status)
    if status == 409 and kind == "finished":
        raise WorkflowError("finished", message, status)
    if status == 404 and kind in ("no-query", "no-update"):
        raise WorkflowError(kind, message, status)
    if status == 422 and kind == "update-rejected":
        raise WorkflowError("update-rejected", message, status)
    raise WorkflowError("refused", message, status)
