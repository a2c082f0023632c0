"""A workflow instance under test: drive it, mock it, read it.

Everything goes through the instance's own protocol (wk-workflow/v1) as an operator's
requests, so the same calls drive it on plain CPython and in the sandbox. Mocks are the
protocol's `test` route (docs/workflow-protocol.md): set before the start or after, they
apply to the attempts, sleeps and waits the instance has not reached yet.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from wkguest.cloudflare.states import STATUS_OF
from wkguest.durations import Duration, to_ms
from wkguest.workflow import cbor
from wkguest.workflow.client import Client
from wkguest.workflow.status import PREFIX, Event, Status, Update, check_answer

ENDED = ("completed", "failed", "cancelled", "terminated")
# Cloudflare's status names that are not the runner's, as the runner's states they stand
# for (wkguest.cloudflare's table): wait_for_status takes either. A name both use
# (running, waiting, paused, terminated) is the runner's.
CLOUDFLARE = {cf: tuple(s for s, c in STATUS_OF.items() if c == cf)
              for cf in set(STATUS_OF.values()) - set(STATUS_OF)} | {"queued": ("running",)}
DEFAULT_WITHIN = 30 * 86_400_000  # how far wait_for_status skips time, by default


class Driver(Protocol):
    """What an instance under test needs of the kit (kit.py's Kit)."""

    def transport(self, cls: str, id: str, method: str, path: str, body: bytes
                  ) -> tuple[int, bytes]: ...
    def run(self) -> int: ...
    def now(self) -> int: ...
    def next_alarm(self) -> int | None: ...
    def skip_to(self, ms: int) -> None: ...


@dataclass(frozen=True)
class Attempt:
    """One attempt of a step: its outcome (returned, failed, timed-out, cut), error and
    traceback (the exception's, from the workflow's own frames)."""

    attempt: int
    outcome: str
    error: str | None
    traceback: str | None
    started_at: int
    ended_at: int | None
    branch: int | None = None  # a group's branch's index, for a branch's attempt
    branch_name: str | None = None


@dataclass(frozen=True)
class Step:
    """One recorded position: a step, sleep or wait, its state and attempts."""

    pos: int
    kind: str
    name: str
    state: str
    attempts: int
    error: str | None
    value: Any
    history: list[Attempt] = field(default_factory=list)


class WorkflowInstance:
    """Instance `id` of a workflow class the kit serves (see the module's doc)."""

    def __init__(self, kit: Driver, cls: str, id: str) -> None:
        self.kit, self.cls, self.id = kit, cls, id
        self.client = Client(cls, transport=lambda i, m, p, b: kit.transport(cls, i, m, p, b))
        self._mocks: dict[str, Any] = {}
        self._ahead: list[tuple[str, Any]] = []  # events mocked before the start
        self._started = False

    # -- driving it --------------------------------------------------------------------
    def start(self, input: Any = None, *, labels: dict[str, str] | None = None,
              event: tuple[str, Any] | None = None,
              update: tuple[str, Any] | None = None) -> Status:
        """Start it with `input` (idempotent), deliver the events mocked ahead, then
        run what is due now. `event`: (name, payload), delivered by the start itself
        (signal-with-start: created or found running); `update`: (name, arg), an
        update sent so (update-with-start: `Status.update` says how it stood)."""
        st = self.client.start(self.id, input, labels=labels, event=event, update=update)
        self._started = True
        for name, payload in self._ahead:
            self.client.send_event(self.id, name, payload)
        self._ahead = []
        self.kit.run()
        return st

    def send_event(self, name: str, payload: Any = None) -> None:
        """Deliver event `name`, then run what is due now."""
        self.client.send_event(self.id, name, payload)
        self.kit.run()

    def update(self, name: str, arg: Any = None, *, update_id: str | None = None) -> Update:
        """Send update `name` (`wf.on_update`), run what is due now, and answer how it
        stands then (`Update.value()`: its handler's answer). Raises WorkflowError
        ("no-update", "update-rejected": its validator refused it)."""
        u = self.client.update(self.id, name, arg, update_id=update_id)
        self.kit.run()
        return self.client.update_status(self.id, u.id)

    def mock_event(self, name: str, payload: Any = None) -> None:
        """Event `name`, there for the wait that asks for it: sent now, or with the start
        if this handle has not started the instance yet (Cloudflare's kit spells it so).
        (A status asked of an instance never started would forget its mocks: the
        runner leaves nothing of an unknown id.)"""
        if not self._started:
            self._ahead.append((name, payload))
        else:
            self.send_event(name, payload)

    def cancel(self, compensate: bool = False) -> Status:
        st = self.client.cancel(self.id, compensate)
        self.kit.run()
        return st

    # -- reading it --------------------------------------------------------------------
    def status(self) -> Status:
        return self.client.status(self.id)

    @property
    def output(self) -> Any:
        return self.status().output

    def events(self, after: int = 0) -> list[Event]:
        """What it emitted (`wf.emit`)."""
        return self.client.events(self.id, after, 500)

    def query(self, name: str, arg: Any = None) -> Any:
        return self.client.query(self.id, name, arg)

    def steps(self) -> list[Step]:
        """Every recorded position, with its attempts (tracebacks included)."""
        out: list[Step] = []
        at: int | None = 0
        while at is not None:
            doc = self._route("steps", {"from": at, "limit": 100, "attempts": True,
                                        "values": True, "value_bytes": 4096})
            for s in doc["steps"]:
                out.append(Step(s["pos"], s["kind"], s["name"], s["state"], s["attempts"],
                                s["error"], _value(s.get("value")),
                                [Attempt(a["attempt"], a["outcome"], a["error"],
                                         a["traceback"], a["started_at"], a["ended_at"],
                                         a.get("branch"), a.get("name"))
                                 for a in s.get("history", [])]))
            at = doc["next"]
        return out

    def step(self, name: str) -> Step:
        """The first position named `name`. Raises KeyError if none is recorded."""
        for s in self.steps():
            if s.name == name:
                return s
        raise KeyError(f"{self.cls}/{self.id} recorded no position named {name!r}")

    def sql(self, query: str, *params: Any) -> list[tuple[Any, ...]]:
        """Rows of `query` over the instance's own database (its tables, and the
        runner's), read in a read-only event; a blob comes as {"b64": TEXT}."""
        return self.table(query, *params)[1]

    def table(self, query: str, *params: Any) -> tuple[list[str], list[tuple[Any, ...]]]:
        """As `sql`, with the columns' names first."""
        got = self._route("test", {"sql": query, "params": list(params)})
        return list(got["columns"]), [tuple(r) for r in got["rows"]]

    # -- waiting -----------------------------------------------------------------------
    def wait_for_status(self, *states: str, within: Duration = DEFAULT_WITHIN) -> Status:
        """Run it, skipping time to each next alarm (sleeps, backoffs, timeouts pass at
        once), until its state is one of `states` (default: any end); its status.
        Raises AssertionError, naming where it stopped, if no alarm within `within`
        of now would bring it there. A state may be named as the runner does
        ("completed", "failed", ...) or as Cloudflare does ("complete", "errored", ...)."""
        wanted = {s for name in states or ENDED for s in CLOUDFLARE.get(name, (name,))}
        return self._until(lambda st: st.state in wanted,
                           f"state {' or '.join(states or ENDED)}", within)

    def wait_for_wait(self, event: str, within: Duration = DEFAULT_WITHIN) -> Status:
        """Run it, skipping time, until it waits for event `event`; its status."""
        return self._until(lambda st: event in st.waiting_for, f"a wait for {event!r}",
                           within)

    def _until(self, done: Any, what: str, within: Duration) -> Status:
        kit = self.kit
        deadline = kit.now() + to_ms(within, "within")
        while True:
            kit.run()
            st = self.status()
            if done(st):
                return st
            nxt = kit.next_alarm()
            if st.state in ENDED or nxt is None or nxt > deadline:
                raise AssertionError(
                    f"{self.cls}/{self.id} did not reach {what}: it is {st.state}"
                    + (f", waiting for {', '.join(st.waiting_for)}" if st.waiting_for else "")
                    + (f", error: {st.error}" if st.error else "")
                    + ("" if nxt is None or st.state in ENDED
                       else f"; its next alarm is past `within`, at +{nxt - kit.now()} ms"))
            kit.skip_to(nxt)

    # -- mocks (the protocol's test route) ----------------------------------------------
    def mock_step_result(self, step: str, result: Any, *, times: int | None = None) -> None:
        """Step `step` returns `result` without running (for `times` attempts: all)."""
        self._rule(step, {"result": result}, times)

    def mock_step_error(self, step: str, message: str, *, times: int | None = None,
                        non_retryable: bool = False) -> None:
        """Step `step`'s attempts fail with `message` (the first `times`: all)."""
        self._rule(step, {"error": message, "non_retryable": non_retryable}, times)

    def force_step_timeout(self, step: str, *, times: int | None = None) -> None:
        """Step `step`'s attempts time out (the first `times`: all)."""
        self._rule(step, {"timeout": True}, times)

    def disable_sleeps(self) -> None:
        """Every sleep ends as soon as it is reached."""
        self._set("sleeps", "skip")

    def force_event_timeout(self, event: str) -> None:
        """A wait for `event` times out as soon as it is reached."""
        self._set("event_timeouts", [*self._mocks.get("event_timeouts", []), event])

    def clear_mocks(self) -> None:
        self._mocks = {}
        self._route("test", {"mocks": {}})

    def _rule(self, step: str, rule: dict[str, Any], times: int | None) -> None:
        if times is not None:
            rule["times"] = times
        steps = self._mocks.setdefault("steps", {})
        steps.setdefault(step, []).append(rule)
        self._route("test", {"mocks": self._mocks})

    def _set(self, key: str, value: Any) -> None:
        self._mocks[key] = value
        self._route("test", {"mocks": self._mocks})

    def _route(self, route: str, msg: dict[str, Any]) -> Any:
        status, body = self.kit.transport(self.cls, self.id, "POST", PREFIX + route,
                                          cbor.dumps(msg))
        doc = cbor.loads(body) if body else None
        return check_answer(status, doc, body[:200].decode("utf-8", "replace"))


def _value(text: str | None) -> Any:
    import json

    return None if text is None else json.loads(text)
