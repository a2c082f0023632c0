"""`FakeHost`: many workflow instances on fake backends, with the host's event rules.

    host = FakeHost()
    host.serve("orders", order, Config())
    orders = host.client("orders")            # a workflow.Client over host.call
    orders.start("o-1", {"item": "book"})
    host.run_due()                            # fire every alarm that is due, in time order
    host.advance(60_000)                      # move the clock, then fire what came due

Host rules it keeps (DESIGN.md): one event at a time; a new actor runs on_init first; after
on_alarm returns, the alarm is cleared unless the event set or cleared it; a trap (raise
`Trap`, or any exception escaping the runner) loses the event's open transaction and the
instance (its warm cache), and an alarm the event did not touch is retried in a second;
delete_self takes effect when the event ends; a trap's reason is kept for
`last_trap` until an event that read it ends cleanly. A call from one instance's event
(`Backend.call`) runs the callee's handle in a nested event, and is refused at once
(CallFailed) into an instance already in an event (the host refuses re-entry and
cycles), into a class not served, into a callee that traps, and into any instance in
`refusing` (a test's stand-in for a busy or unreachable actor). `always_replay=True`
gives every event a fresh runner, so each one replays from the stored journal (a hunt
for non-determinism).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..backend import TRAP_GUEST, CallFailed, LastTrap
from ..client import Client
from ..core.config import Config
from ..errors import WorkflowSignal
from ..protocol import Protocol
from ..routes import Reply
from ..runner import Runner, Workflow
from .fakes import FakeBackend, FakeClock

HOST_RETRY_MS = 1000
TRAPPED = object()


class Trap(BaseException):
    """Raise it anywhere in a workflow or a step to make the event trap, as wasm would."""


@dataclass
class Instance:
    backend: FakeBackend
    runner: Runner
    protocol: Protocol


class FakeHost:
    def __init__(self, clock: FakeClock | None = None, *, always_replay: bool = False) -> None:
        self.clock = clock or FakeClock()
        self.always_replay = always_replay
        self.traceparent = ""  # each new instance's FakeBackend.traceparent: "" untraced
        self.classes: dict[str, tuple[Workflow, Config]] = {}
        self.instances: dict[tuple[str, str], Instance] = {}
        self.traps = 0
        self.busy: set[tuple[str, str]] = set()  # instances in an event now (nested calls)
        self.refusing: set[tuple[str, str]] = set()  # calls to these fail (tests)

    def serve(self, cls: str, fn: Workflow, config: Config | None = None) -> None:
        self.classes[cls] = (fn, config or Config())

    def instance(self, cls: str, id: str) -> Instance:
        """The live instance (KeyError if it does not exist, or deleted itself)."""
        return self.instances[(cls, id)]

    def client(self, cls: str) -> Client:
        return Client(cls, transport=lambda id, m, p, b: self.call(cls, id, m, p, b))

    def call(self, cls: str, id: str, method: str, path: str, body: bytes = b"",
             sender: str = "actor") -> tuple[int, bytes]:
        """A request to `cls`/`id`'s handle, from `sender` (public, actor, operator)."""
        out = self._event(cls, id, lambda i: i.protocol.handle(method, path, body, sender))
        if out is TRAPPED:
            return 500, b"the instance trapped"
        assert isinstance(out, Reply)
        return out.status, out.body

    def fire(self, cls: str, id: str) -> bool:
        """Run `cls`/`id`'s on_alarm now, due or not. False if it trapped."""
        return self._event(cls, id, lambda i: i.runner.on_alarm(), alarm=True) is not TRAPPED

    def due(self) -> tuple[str, str] | None:
        """The instance whose alarm is due first, if any."""
        now = self.clock.now()
        pending = [(i.backend.alarm, k) for k, i in self.instances.items()
                   if i.backend.alarm is not None and i.backend.alarm <= now]
        return min(pending)[1] if pending else None

    def run_due(self, limit: int = 10_000) -> int:
        """Fire due alarms, earliest first, until none is due. Returns how many fired."""
        for fired in range(limit):
            key = self.due()
            if key is None:
                return fired
            self.fire(*key)
        raise RuntimeError(f"alarms still due after {limit} events: a run that never waits?")

    def advance(self, ms: int) -> int:
        """Move the clock by `ms`, then `run_due`."""
        self.clock.jump(ms)
        return self.run_due()

    def _event(self, cls: str, id: str, action: Callable[[Instance], Any],
               alarm: bool = False) -> Any:
        inst = self.instances.get((cls, id)) or self._create(cls, id)
        if inst is None:
            return TRAPPED
        if self.always_replay:
            inst.runner, inst.protocol = self._runner(cls, inst.backend)
        b = inst.backend
        b.alarm_touched = b.trap_read = False
        self.busy.add((cls, id))
        try:
            out = action(inst)
        except (Exception, Trap, WorkflowSignal) as e:
            # As wasm traps: no exception reported (wkguest.export reports an uncaught one)
            b.trap_info = LastTrap(TRAP_GUEST, f"guest trapped: {type(e).__name__}: {e}")
            self._trap(cls, inst, alarm)
            out = TRAPPED
        else:
            if alarm and not b.alarm_touched:
                b.alarm = None
            if b.trap_read:
                b.trap = None
        self.busy.discard((cls, id))
        b.rollback_open()
        if b.deleted:
            del self.instances[(cls, id)]
        return out

    def _trap(self, cls: str, inst: Instance, alarm: bool) -> None:
        self.traps += 1
        inst.backend.rollback_open()
        inst.runner, inst.protocol = self._runner(cls, inst.backend)  # a fresh wasm instance
        if alarm and not inst.backend.alarm_touched:
            inst.backend.alarm = self.clock.now() + HOST_RETRY_MS

    def _call_from(self, caller: tuple[str, str], cls: str, id: str, method: str, path: str,
                   body: bytes) -> tuple[int, bytes]:
        """`caller`'s Backend.call to `cls`/`id`, in a nested event (see the module doc)."""
        route = f"{caller[0]}/{caller[1]} -> {cls}/{id}"
        if (cls, id) in self.busy:
            raise CallFailed(f"re-entrant call refused: {route}")
        if (cls, id) in self.refusing:
            raise CallFailed(f"call refused (the test's refusing): {route}")
        if cls not in self.classes:
            raise CallFailed(f"unknown class {cls!r}")
        out = self._event(cls, id, lambda i: i.protocol.handle(method, path, body, "actor"))
        if out is TRAPPED:
            raise CallFailed(f"the callee trapped: {route}")
        assert isinstance(out, Reply)
        return out.status, out.body

    def _create(self, cls: str, id: str) -> Instance | None:
        backend = FakeBackend(self.clock, (cls, id))
        backend.traceparent = self.traceparent
        backend.caller = lambda c, i, m, p, b: self._call_from((cls, id), c, i, m, p, b)
        runner, protocol = self._runner(cls, backend)
        try:
            runner.init()
        except (Exception, Trap, WorkflowSignal):
            self.traps += 1
            return None  # on_init trapped: the actor was not created
        inst = self.instances[(cls, id)] = Instance(backend, runner, protocol)
        return inst

    def _runner(self, cls: str, backend: FakeBackend) -> tuple[Runner, Protocol]:
        fn, config = self.classes[cls]
        runner = Runner(fn, config, backend)
        return runner, Protocol(runner)


__all__ = ["FakeHost", "Instance", "Reply", "Trap"]
