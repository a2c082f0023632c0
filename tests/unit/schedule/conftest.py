"""A fake host for the schedule class, beside a FakeHost of workflow classes.

    hosts = SchedHost(FakeHost())
    hosts.wf.serve("jobs", job)
    hosts.create("nightly", target="jobs", cron="*/10 * * * *")
    hosts.advance(600_000)   # move the clock, then fire every due alarm of both

It keeps the host's rules that matter here: after on_alarm returns, the alarm is cleared
unless the event set or cleared it; an event that raises (or traps) loses its open
transaction, and an alarm it did not touch is retried a second later; delete_self takes
effect when the event ends. A schedule's calls reach the workflow FakeHost's instances
as an actor's. Every event gets a fresh Schedules (it keeps nothing between events).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from wkguest.errors import CallErrorKind
from wkguest.schedule.service import PREFIX, Schedules
from wkguest.workflow.backend import CallFailed
from wkguest.workflow.testing import FakeHost
from wkguest.workflow.testing.fakes import FakeBackend

CLS = "schedules"
RETRY_MS = 1000
MINUTE = 60_000


class SchedHost:
    def __init__(self, wf: FakeHost) -> None:
        self.wf = wf
        self.clock = wf.clock
        self.backends: dict[str, FakeBackend] = {}
        self.traps = 0
        # A class's calls failing with the host's kind and reason, as for a class that is
        # not a workflow class ("not-declared").
        self.call_fails: dict[str, tuple[CallErrorKind, str]] = {}

    # -- requests ----------------------------------------------------------------------
    def call(self, name: str, route: str, msg: Any = None, *, method: str = "POST",
             sender: str = "operator", raw: bytes | None = None) -> tuple[int, Any]:
        body = raw if raw is not None else b"" if msg is None else json.dumps(msg).encode()
        b = self._backend(name)
        out = Schedules(b).handle(method, PREFIX + route, body, sender)
        self._ended(name, b)
        return out.status, json.loads(out.body)

    def create(self, name: str, **spec: Any) -> dict[str, Any]:
        status, doc = self.call(name, "create", spec)
        assert status == 200, doc
        return dict(doc)

    def describe(self, name: str, **msg: Any) -> dict[str, Any]:
        status, doc = self.call(name, "describe", msg)
        assert status == 200, doc
        return dict(doc)

    # -- alarms ------------------------------------------------------------------------
    def fire(self, name: str) -> bool:
        """Run `name`'s on_alarm now. False if it raised (the host retries it)."""
        b = self.backends[name]
        b.alarm_touched = False
        try:
            Schedules(b).on_alarm()
        except BaseException:  # noqa: BLE001 - an event that raises, or traps
            self.traps += 1
            b.rollback_open()
            if not b.alarm_touched:
                b.alarm = self.clock.now() + RETRY_MS
            return False
        if not b.alarm_touched:
            b.alarm = None
        self._ended(name, b)
        return True

    def run_due(self, limit: int = 1000) -> None:
        for _ in range(limit):
            now = self.clock.now()
            due = sorted((b.alarm, n) for n, b in self.backends.items()
                         if b.alarm is not None and b.alarm <= now)
            ran = self.wf.run_due()
            if due:
                self.fire(due[0][1])
            elif not ran:
                return
        raise RuntimeError("alarms still due")

    def advance(self, ms: int) -> None:
        self.clock.jump(ms)
        self.run_due()

    def advance_to(self, at_ms: int) -> None:
        self.advance(max(0, at_ms - self.clock.now()))

    # -- what the workflow host has ------------------------------------------------------
    def instances(self, cls: str) -> list[str]:
        return sorted(i for c, i in self.wf.instances if c == cls)

    # -- the fake actors ---------------------------------------------------------------
    def _backend(self, name: str) -> FakeBackend:
        if name not in self.backends:
            b = FakeBackend(self.clock, (CLS, name))
            b.caller = self._caller
            Schedules(b).init()
            self.backends[name] = b
        return self.backends[name]

    def _caller(self, cls: str, id: str, method: str, path: str, body: bytes
                ) -> tuple[int, bytes]:
        if cls in self.call_fails:
            kind, reason = self.call_fails[cls]
            raise CallFailed(reason, kind)
        if cls not in self.wf.classes:  # as the host says it
            raise CallFailed(f"unknown: no actor class named {cls!r}", "unknown-class")
        return self.wf.call(cls, id, method, path, body, "actor")

    def _ended(self, name: str, b: FakeBackend) -> None:
        b.rollback_open()
        if b.deleted:
            del self.backends[name]


@pytest.fixture(params=[False, True], ids=["warm", "always-replay"])
def hosts(request: pytest.FixtureRequest) -> SchedHost:
    """Both modes of the workflow FakeHost (the schedules keep nothing warm anyway)."""
    return SchedHost(FakeHost(always_replay=request.param))
