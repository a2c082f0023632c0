"""The binding: `Workflow("ingest")`, Cloudflare's workflow binding over `workflow.Client`.

    INGEST = Workflow("ingest")                          # at module level, in any actor
    inst = INGEST.create(params={"materialId": "m1"})    # id: a new UUID
    inst = INGEST.create(id="m1", params={...})          # WorkflowError "exists" if taken
    INGEST.create_batch([{"id": "a", "params": 1}, {"params": 2}])
    inst = INGEST.get("m1")                              # WorkflowError "unknown" if none
    inst.status()            # InstanceStatus(status="waiting", error, output, state)
    inst.send_event(type="reviewed", payload={"ok": True})
    inst.pause(); inst.resume(); inst.terminate(rollback=True)
    inst.restart(); inst.restart(from_step="convert")   # or {"name": "convert", "count": 3}

Each call is one call of the instance (`workflow.Client`); errors are WorkflowError.

create_batch follows Cloudflare's array form: every entry is checked first (nothing is
created for a malformed batch), then each is created in order; if any id was taken, those
instances are left as they were, the others are created all the same, and it raises
WorkflowError "exists" naming the taken ids. (Cloudflare documents that a taken id throws;
it does not say what becomes of the rest of the batch: here nothing else is lost.)
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from wkguest.workflow.client import Client, Transport
from wkguest.workflow.errors import ErrorKind, WorkflowError
from wkguest.workflow.status import Status

from .errors import EXISTS, exists
from .states import cloudflare_status

_BATCH_KEYS = ("id", "params")
_FROM_KEYS = ("name", "count")


@dataclass(frozen=True)
class InstanceStatus:
    """`status`: Cloudflare's name (states.py); `error`: why it failed (None unless it
    did, or a run did not end cleanly); `output`: the return value of `run()` once
    complete; `state`: the runner's own state ("parked" tells an errored instance that an
    operator can rescue from one that failed)."""

    status: str
    error: str | None
    output: Any
    state: str

    @classmethod
    def of(cls, s: Status) -> InstanceStatus:
        return cls(cloudflare_status(s.state, s.positions), s.error, s.output, s.state)


class WorkflowInstance:
    """One instance of a workflow class, by id (`Workflow.create` or `Workflow.get`)."""

    __slots__ = ("_client", "id")

    def __init__(self, client: Client, id: str) -> None:
        self._client = client
        self.id = id

    def __repr__(self) -> str:
        return f"WorkflowInstance({self._client.cls!r}, {self.id!r})"

    def status(self) -> InstanceStatus:
        return InstanceStatus.of(self._client.status(self.id))

    def pause(self) -> None:
        """It starts no new work (a step running now finishes first) until resumed."""
        self._client.pause(self.id)

    def resume(self) -> None:
        self._client.resume(self.id)

    def terminate(self, rollback: bool = False) -> None:
        """Stop it at once (terminated). `rollback`: first run the rollbacks of its
        completed steps, newest first (their `error` is None), then it is terminated."""
        if rollback:
            self._client.cancel(self.id, compensate=True)
        else:
            self._client.terminate(self.id)

    def restart(self, from_step: str | Mapping[str, Any] | None = None) -> None:
        """Run it again: from the start (None), or from a step, by name (its first
        occurrence) or as {"name": ..., "count": n} (its n-th), keeping the results
        recorded before it. (A wait is recorded under its event's type, not its name.)"""
        if from_step is None:
            self._client.restart(self.id)
            return
        name, count = _from_step(from_step)
        self._client.restart(self.id, step=name, occurrence=count)

    def send_event(self, type: str, payload: Any = None) -> None:
        """Deliver an event of `type`: the oldest one waiting is taken by the next
        `step.wait_for_event(..., type=type)`, even one reached after it was sent."""
        if not isinstance(type, str):
            raise TypeError(f"send_event: type must be a str, not {type!r}")
        self._client.send_event(self.id, type, payload)


class Workflow:
    """Cloudflare's workflow binding, for the workflow class `cls` (served with
    `wkguest.cloudflare.serve`). `transport` replaces the actor call (tests)."""

    def __init__(self, cls: str, *, transport: Transport | None = None) -> None:
        self.cls = cls
        self._client = Client(cls, transport=transport)

    def create(self, id: str | None = None, params: Any = None) -> WorkflowInstance:
        """Start an instance with `params` (its `event.payload`); `id` defaults to a new
        UUID. Raises WorkflowError "exists" if an instance `id` exists (running, or
        finished and still kept), leaving it as it was."""
        if id is None:
            id = str(uuid.uuid4())
        elif not isinstance(id, str):
            raise TypeError(f"create: id must be a str, not {id!r}")
        if not self._client.start(id, params).created:
            raise exists(id)
        return WorkflowInstance(self._client, id)

    def create_batch(self, batch: Sequence[Mapping[str, Any]]) -> list[WorkflowInstance]:
        """Several creates, in order (see the module doc for a taken id)."""
        entries = [_batch_entry(i, e) for i, e in enumerate(_sequence(batch))]
        made, taken = [], []
        for id, params in entries:
            try:
                made.append(self.create(id, params))
            except WorkflowError as e:
                if e.kind != EXISTS:
                    raise
                taken.append(id)
        if taken:
            raise WorkflowError(cast(ErrorKind, EXISTS), f"create_batch: {len(taken)} of "
                                f"{len(entries)} id(s) exist and were left as they were: "
                                + ", ".join(map(repr, taken)), 409)
        return made

    def get(self, id: str) -> WorkflowInstance:
        """The instance `id`. Raises WorkflowError "unknown" if there is none."""
        self._client.status(id)
        return WorkflowInstance(self._client, id)


def _sequence(batch: object) -> Sequence[Any]:
    if isinstance(batch, str | bytes | Mapping) or not isinstance(batch, Sequence):
        raise TypeError(f"create_batch: batch must be a list of {{'id', 'params'}} dicts, "
                        f"not {type(batch).__name__}")
    return batch


def _batch_entry(i: int, e: object) -> tuple[str | None, Any]:
    if not isinstance(e, Mapping):
        raise TypeError(f"create_batch: entry {i} must be a dict with 'id' and/or "
                        f"'params', not {e!r}")
    unknown = sorted(set(map(str, e)) - set(_BATCH_KEYS))
    if unknown:
        raise ValueError(f"create_batch: entry {i} has unknown key(s) "
                         f"{', '.join(map(repr, unknown))}; the keys are id, params")
    id = e.get("id")
    if id is not None and not isinstance(id, str):
        raise TypeError(f"create_batch: entry {i}: id must be a str, not {id!r}")
    return id, e.get("params")


def _from_step(from_step: object) -> tuple[str, int]:
    if isinstance(from_step, str):
        return from_step, 1
    if not isinstance(from_step, Mapping):
        raise TypeError(f"restart: from_step must be a step's name or a dict with 'name' "
                        f"and 'count', not {from_step!r}")
    unknown = sorted(set(map(str, from_step)) - set(_FROM_KEYS))
    if unknown:
        raise ValueError(f"restart: from_step has unknown key(s) "
                         f"{', '.join(map(repr, unknown))}; the keys are name, count")
    name, count = from_step.get("name"), from_step.get("count", 1)
    if not isinstance(name, str):
        raise TypeError(f"restart: from_step's name must be a str, not {name!r}")
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValueError(f"restart: from_step's count must be a whole number >= 1, "
                         f"not {count!r}")
    return name, count


__all__ = ["InstanceStatus", "Workflow", "WorkflowInstance"]
