"""The host's Observer (events/observe.py): a probe the host calls, told of each guest
call, each host function and each event, so that a bench measures without wrapping the
host's functions; and Alarms.run_now, an actor's on-alarm run now, due or not."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from wkhost import metrics
from wkhost.config import HostConfig
from wkhost.core.host import Host
from wkhost.events.event import ActorGone
from wkhost.testing import FakeClock
from wkhost.types import ActorRef

from .support import COMPILED, START_MS, Probe


class Recorder:
    """An Observer that keeps what it is told."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.calls: list[tuple[ActorRef, str, int, int]] = []
        self.functions: list[tuple[str, str, int]] = []
        self.events: list[tuple[ActorRef, str, str, int]] = []

    def guest_call(self, ref: ActorRef, export: str, wall_ns: int, fuel: int) -> None:
        with self.lock:
            self.calls.append((ref, export, wall_ns, fuel))

    def host_function(self, interface: str, name: str, ns: int) -> None:
        with self.lock:
            self.functions.append((interface, name, ns))

    def event_ended(self, ref: ActorRef, kind: str, outcome: str, wall_ns: int) -> None:
        with self.lock:
            self.events.append((ref, kind, outcome, wall_ns))


@pytest.fixture
def observed(tmp_path: Path, probe_wasm: Path) -> Iterator[tuple[Probe, Recorder]]:
    seen, clock = Recorder(), FakeClock(START_MS)
    host = Host(HostConfig(data_dir=tmp_path / "data", cache_dir=COMPILED), clock,
                observer=seen)
    try:
        host.add_class("probe", probe_wasm)
        host.start()
        yield Probe(host, clock), seen
    finally:
        host.close(timeout_s=2)


def test_the_observer_is_told_of_each_guest_call_host_function_and_event(
        observed: tuple[Probe, Recorder]) -> None:
    p, seen = observed
    p.sql("a", "CREATE TABLE t (x)")
    ref = p.host.actor_ref("probe", "a")
    assert [export for r, export, _, _ in seen.calls if r == ref] == ["on-init", "handle"]
    assert all(wall_ns > 0 and fuel > 0 for _, _, wall_ns, fuel in seen.calls)
    assert any(iface == "sqlite" and ns > 0 for iface, _, ns in seen.functions)
    ended = [(kind, outcome) for r, kind, outcome, _ in seen.events if r == ref]
    assert ended[-1] == ("request", metrics.OK)


def test_run_now_runs_the_on_alarm_of_an_actor_whose_alarm_is_not_due(
        observed: tuple[Probe, Recorder]) -> None:
    p, seen = observed
    assert p.json("b", "GET", "/alarm") == {"at": None}
    ref = p.host.actor_ref("probe", "b")
    assert p.host.alarms.run_now(ref, deadline=_in(30)) is None
    assert [row[0] for row in p.json("b", "GET", "/log")["rows"]] == ["init", "alarm"]
    assert p.json("b", "GET", "/alarm") == {"at": None}  # the row as the guest left it
    assert (ref, "alarm", metrics.OK) in [(r, k, o) for r, k, o, _ in seen.events]
    with pytest.raises(ActorGone):
        p.host.alarms.run_now(p.host.actor_ref("probe", "none"), deadline=_in(30))


def _in(seconds: float) -> float:
    import time

    return time.monotonic() + seconds
