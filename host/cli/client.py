"""Operators' client for workflow instances, over a running `wkhost serve` (blocking HTTP).

    admin = WorkflowAdmin("http://127.0.0.1:8080", token)
    admin.start("orders", "order-42", {"item": "book"})   # a Started; idempotent while kept
    admin.start("orders", "o-43", {}, labels={"region": "eu"})  # labels to list it by
    admin.send_event("orders", "order-42", "approved", {"by": "ann"})
    admin.status("orders", "order-42")                     # Status
    admin.status("orders", "order-42", wait=30)            # Status once at rest (<= 30 s)
    admin.steps("orders", "order-42")                      # every recorded position
    admin.cancel("orders", "order-42")
    admin.list("orders", state="waiting")                  # [(id, summary), ...]
    admin.events("orders", "order-42", after=0)            # what it emitted: [Event, ...]
    admin.query("orders", "order-42", "progress")          # a query handler's answer
    admin.update("orders", "order-42", "add", {"sku": "b"}, wait=30)  # an Update, ended
    admin.pause("orders", "order-42"); admin.resume(...)   # terminate, rescue, restart too

It speaks wk-workflow/v1 (docs/workflow-protocol.md) to
`{base_url}/{class}/{quoted id}/wk-workflow/v1/<route>` with the admin token, so the host
marks the requests as the operator's: they reach classes served `--access internal`,
and the runner accepts them. It never reads the SDK's tables: the instance answers.
Listing reads the host's index of what each instance published (`/_wk/actors/{class}`,
as `wkhost workflow list` does: host/cli/instances.py): one request a page of 10,000, and
no instance runs an event for it.

A start answers a `Started`: the Status, with `created` (True only for the start that
made the instance) and `input_differs` (for an instance that already existed: the input
given is not the instance's, and was ignored; nothing about the instance changes), plus
`created_at`, when the instance was made (ms, host clock).

Errors are wkguest.workflow.WorkflowError: "unknown" and "finished" as the runner says;
"call" when the request failed on the way (connection, timeout, the host's own 5xx such
as a trapped instance: it may or may not have recorded it; `status` is None when no
answer came at all); "refused" for any other answer, with its status.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from typing import Any
from urllib.parse import quote

import cbor2
from wkguest.workflow.client import KEEP, with_start_fields
from wkguest.workflow.errors import WorkflowError
from wkguest.workflow.status import (
    CONTENT_TYPE,
    PREFIX,
    PROTOCOL,
    Event,
    Status,
    Update,
    check_answer,
    events_of,
)

from .admin import NoAnswer, request
from .admin_listing import Listing
from .answers import content_type, decode_answer, text_of, wait_ms

__all__ = ["Event", "Started", "Status", "Update", "WorkflowAdmin", "WorkflowError"]



@dataclass(frozen=True)
class Started(Status):
    """The answer to a start: its Status (`created`, `input_differs` included) and when
    the instance was created (ms, host clock; None if the runner did not say)."""

    created_at: int | None = None

    @classmethod
    def from_start(cls, m: Any) -> Started:
        s = Status.from_map(m)  # checks the map
        at = m.get("created_at")
        return cls(**{f.name: getattr(s, f.name) for f in fields(Status)},
                   created_at=at if isinstance(at, int) and not isinstance(at, bool) else None)


class WorkflowAdmin(Listing):
    def __init__(self, base_url: str, token: str, *, timeout: float = 30.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self._builds: dict[str, str] | None = None

    # -- the client routes ---------------------------------------------------------

    def start(self, cls: str, id: str, input: Any = None, *, wait: float = 0,
              labels: dict[str, str] | None = None,
              event: tuple[str, Any] | None = None,
              update: tuple[str, Any] | None = None,
              update_id: str | None = None,
              idempotency_key: str | None = None, debounce_ms: int | None = None
              ) -> Started:
        """Start `id` with `input` and `labels` (what operators list it by: `wkhost
        workflow list --label K=V`), or find it: an instance that exists is left as it
        is, its labels too (`created` False; `input_differs` True if `input` is not its
        input, which is then ignored). With `wait` (seconds), the answer comes once the
        instance rests (finished, or parked), or when `wait` is up with the status of
        that moment. `event` (name, payload): delivered in the same request, created or
        found (signal-with-start; a finished instance: WorkflowError "finished").
        `update` (name, arg), with `update_id`: sent in the same request, created or
        found (update-with-start); `Started.update` says how it stands, and with `wait`
        the answer comes once its handler has ended. `idempotency_key` (the
        Idempotency-Key header): the same start sent again answers as the first did.
        `debounce_ms`: begin it once that long has passed with no newer such start."""
        msg = {"input": input, **wait_ms(wait), **({"labels": labels} if labels else {}),
               **with_start_fields(event, update, update_id),
               **({} if debounce_ms is None else {"debounce_ms": debounce_ms})}
        key = {"Idempotency-Key": idempotency_key} if idempotency_key else {}
        return Started.from_start(self._call(cls, id, "start", msg, wait, key))

    def status(self, cls: str, id: str, *, wait: float = 0, held_by: bool = False) -> Status:
        """With `wait` (seconds), as for start: the status once finished or parked, or
        at `wait`. A parked instance's status says why (`error`) and since when
        (`parked_at`). `held_by`: also who runs it now (`Status.held_by`: "process 2 of
        4 (pid 1234)")."""
        msg = {**wait_ms(wait), **({"held_by": True} if held_by else {})}
        return Status.from_map(self._call(cls, id, "status", msg, wait))

    def send_event(self, cls: str, id: str, name: str, payload: Any = None) -> None:
        self._call(cls, id, "event", {"name": name, "payload": payload})

    def cancel(self, cls: str, id: str, *, compensate: bool = False) -> Status:
        """`compensate`: the instance runs its compensations first (state compensating),
        then ends cancelled; a parked one is cancelled at once, compensating nothing."""
        msg = {"compensate": True} if compensate else {}
        return Status.from_map(self._call(cls, id, "cancel", msg))

    # -- an operator's moves (the runner's ops.py) ------------------------------------

    def terminate(self, cls: str, id: str, *, reason: str | None = None) -> Status:
        """Stop it at once (terminated; no compensation; its children not detached are
        terminated too). A finished instance is left as it is: its status says how."""
        return self._move(cls, id, "terminate", {} if reason is None else {"reason": reason})

    def pause(self, cls: str, id: str) -> Status:
        """It starts no new work, holds no alarm, still records events (refused, 409,
        for a parked or finished instance)."""
        return self._move(cls, id, "pause", {})

    def resume(self, cls: str, id: str) -> Status:
        """A paused instance goes on where it stopped (refused, 409, if not paused)."""
        return self._move(cls, id, "resume", {})

    def rescue(self, cls: str, id: str) -> Status:
        """A parked or failed instance runs again from its failing position under the
        code now deployed; refused (409) once a failed one's compensations have run."""
        return self._move(cls, id, "rescue", {})

    def restart(self, cls: str, id: str, *, from_position: int | None = None,
                step: str | None = None, occurrence: int = 1, input: Any = KEEP) -> Status:
        """From the start (a new run id; `input` replaces the instance's), or from a
        position (`from_position`, or the `occurrence`-th named `step`), keeping the
        results recorded before it and the run id."""
        msg: dict[str, Any] = {} if input is KEEP else {"input": input}
        if from_position is not None:
            msg["from"] = from_position
        if step is not None:
            msg |= {"step": step, "occurrence": occurrence}
        return self._move(cls, id, "restart", msg)

    def _move(self, cls: str, id: str, route: str, msg: dict[str, Any]) -> Status:
        return Status.from_map(self._call(cls, id, route, msg))

    # -- the operator routes -------------------------------------------------------

    def steps(self, cls: str, id: str, *, start: int = 0, limit: int | None = None
              ) -> list[dict[str, Any]]:
        """Recorded positions from `start` (all of them, page by page, unless `limit`):
        each a map with pos, name, kind, state, attempts, error, next_attempt_at,
        wake_at, result_bytes, event_seq, updated_at."""
        out: list[dict[str, Any]] = []
        nxt: int | None = start
        while nxt is not None and (limit is None or len(out) < limit):
            page = self._call(cls, id, "steps", {"from": nxt, "limit": 500})
            out.extend(page.get("steps") or [])
            nxt = page.get("next")
        return out if limit is None else out[:limit]

    def events(self, cls: str, id: str, *, after: int = 0, limit: int | None = None
               ) -> list[Event]:
        """The events the instance emitted (`wf.emit`) from offset `after` (the first
        `after` are skipped), all of them page by page unless `limit`."""
        out: list[Event] = []
        while limit is None or len(out) < limit:
            page = self._call(cls, id, "events", {"after": after + len(out), "limit": 500})
            got = events_of(page)
            out.extend(got)
            if not got or page.get("more") is not True:
                break
        return out if limit is None else out[:limit]

    def query(self, cls: str, id: str, name: str, arg: Any = None) -> Any:
        """The answer of the instance's query handler `name` to `arg`, over the state its
        journal replays to (nothing new runs, nothing is written). WorkflowError
        "no-query" for a name the workflow does not register."""
        return self._call(cls, id, "query", {"name": name, "arg": arg}).get("result")

    def update(self, cls: str, id: str, name: str, arg: Any = None, *,
               update_id: str | None = None, wait: float = 60) -> Update:
        """Send update `name` with `arg` (`wf.on_update`); with `wait` (seconds, at most
        120 a request), the answer comes once its handler has ended, else how it stands
        then ("accepted", "taken": `update_status` with its id asks again). Refused,
        nothing recorded: WorkflowError "no-update", "update-rejected" (its validator).
        `update_id` makes it idempotent: the same id answers the same update."""
        msg = {"name": name, "arg": arg, **wait_ms(wait),
               **({"id": update_id} if update_id else {})}
        return Update.from_answer(self._call(cls, id, "update", msg, wait))

    def update_status(self, cls: str, id: str, update_id: str, *, wait: float = 0) -> Update:
        """How update `update_id` stands, once it has ended if `wait` (seconds)."""
        msg = {"id": update_id, **wait_ms(wait)}
        return Update.from_answer(self._call(cls, id, "update", msg, wait))

    def export(self, cls: str, id: str, *, leave_out: tuple[str, ...] = ()) -> dict[str, Any]:
        """The instance's whole state as a `wk-workflow-export/1` document (JSON-able;
        the `export` route's, docs/workflow-protocol.md), with `build`: the sha256 of the
        component that serves `cls` here. Tables in `leave_out` keep their schema only."""
        doc: dict[str, Any] = self._call(cls, id, "export", {"leave_out": list(leave_out)})
        doc["build"] = self.builds().get(cls)
        return doc

    def import_(self, doc: dict[str, Any], cls: str, id: str) -> Status:
        """Make instance `cls`/`id` of an exported document; its status. Refused
        ("exists") if the id has an instance."""
        return Status.from_map(self._call(cls, id, "import", {"document": doc}))

    def builds(self) -> dict[str, str]:
        """Each class this server serves, by the sha256 of its component (asked once)."""
        if self._builds is None:
            status, body, _, _ = self._send("GET", f"{self.base_url}/_wk/classes")
            if status != 200:
                raise WorkflowError("refused", text_of(body) or f"status {status}", status)
            self._builds = {n: c["build"] for n, c in json.loads(body)["classes"].items()}
        return self._builds

    def summary(self, cls: str, id: str) -> dict[str, Any]:
        """The status map without the output (see the protocol doc)."""
        answer: dict[str, Any] = self._call(cls, id, "summary", {})
        return answer

    # -- transport -----------------------------------------------------------------

    def url(self, cls: str, id: str, route: str) -> str:
        return f"{self.base_url}/{quote(cls, safe='')}/{quote(id, safe='')}{PREFIX}{route}"

    def _call(self, cls: str, id: str, route: str, msg: dict[str, Any],
              wait: float = 0, headers: dict[str, str] | None = None) -> Any:
        status, body, ctype, kind = self._send(
            "POST", self.url(cls, id, route), cbor2.dumps(msg, canonical=True),
            # The host delivers it only to a class that declares the protocol: another
            # class runs none of its code for it.
            {"Content-Type": CONTENT_TYPE, "wk-protocol": PROTOCOL, **(headers or {})},
            self.timeout + wait)
        # The front door answers a host error with its status, one line of text and its
        # kind (an unknown class is a 404 too): the kind tells this one.
        if kind == "NotThatProtocol":
            raise WorkflowError("not-a-workflow", f"class {cls!r} is not a workflow class; "
                                f"nothing of it was run ({text_of(body)})", status)
        doc = decode_answer(body) if ctype in ("", CONTENT_TYPE) else None
        if doc is None and status >= 500:  # the host's own failure, before any answer
            raise WorkflowError("call", text_of(body) or f"status {status}", status)
        return check_answer(status, doc, text_of(body))

    def _send(self, method: str, url: str, body: bytes | None = None,
              headers: dict[str, str] | None = None, timeout: float | None = None
              ) -> tuple[int, bytes, str, str]:
        """(status, body, content type without parameters, a host error's kind or "");
        any status is an answer."""
        try:
            answer = request(method, url, token=self.token, body=body, headers=headers,
                             timeout=timeout or self.timeout)
        except NoAnswer as e:
            raise WorkflowError("call", f"{url}: {e.error}") from None
        return answer.status, answer.body, content_type(answer.content_type), answer.error_kind
