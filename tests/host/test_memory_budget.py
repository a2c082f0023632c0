"""--memory-budget on a real host: the RSS it reads is this test process's own, the
instances are the probe's, the pool is wasmtime's (runtime/memory_budget.py).

A budget is set once the host has started (the config's and the budget's own figure, as
`serve --memory-budget` would have set both), at what this process already holds plus a
margin: the test runner's memory is not the host's to let go."""

from __future__ import annotations

import json
import logging
import socket
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from wkhost import metrics
from wkhost.config import HostConfig
from wkhost.core import host as host_module
from wkhost.core.gauges import registry_of
from wkhost.core.host import Host
from wkhost.engine.spare_instances import SpareInstances
from wkhost.events.eviction import Eviction
from wkhost.fetch import FetchPolicy
from wkhost.runtime.memory import resident_bytes, trim_heap
from wkhost.testing import FakeClock

from .support import COMPILED, REPO, START_MS, MakeProbe, Probe, wait_until

MiB = 1 << 20
UNBOUNDED = 1 << 40  # a budget the host starts with: never reached


def set_budget(p: Probe, budget: int) -> None:
    p.host.config.memory_budget_bytes = budget  # the live cap the budget derives
    assert p.host.memory is not None
    p.host.memory.budget = budget


def rss() -> int:
    value = resident_bytes()
    assert value is not None, "no /proc/self/statm"
    return value


def evictions() -> float:
    return metrics.MEMORY_EVICTIONS._value.get()


def burst_under_a_budget(probe_wasm: Path, data_dir: Path) -> dict[str, int]:
    """In a process of its own (the test's): a host whose budget is what this process
    holds plus 256 MiB, and 60 new actors each with 8 MiB of guest heap touched; the peak
    RSS seen, the budget, and what was let go."""
    host = Host(HostConfig(data_dir=data_dir, cache_dir=COMPILED,
                           memory_budget_bytes=UNBOUNDED, idle_instance_s=3600),
                FakeClock(START_MS))
    try:
        host.add_class("probe", probe_wasm)
        host.start()
        p = Probe(host, FakeClock(START_MS))
        p.send("warm", "GET", "/alloc", query="mb=8")  # the host's own first-use memory
        trim_heap()
        budget = rss() + 256 * MiB
        set_budget(p, budget)
        before = evictions()
        peak = 0
        # Unbounded, 60 actors each with 8 MiB of guest heap touched grow it by far more.
        for i in range(60):
            r = p.send(f"a{i}", "GET", "/alloc", query="mb=8")
            assert r.status == 200
            peak = max(peak, rss())
        again = p.json("a0", "GET", "/alloc", query="mb=1")["len"]
        return {"peak": peak, "budget": budget, "live": len(host._table), "again": again,
                "evicted": int(evictions() - before)}
    finally:
        host.close(timeout_s=2)


def test_a_small_budget_under_many_new_actors_keeps_the_rss_under_it(
        probe_wasm: Path, tmp_path: Path) -> None:
    # In a fresh process: the RSS the budget reads is the whole process's, and a test
    # runner's worker that has run hundreds of tests holds gigabytes, against which the
    # budget's live cap (derived from its size) no longer bites.
    script = ("import json, sys; from pathlib import Path; "
              "from tests.host.test_memory_budget import burst_under_a_budget as b; "
              "print(json.dumps(b(Path(sys.argv[1]), Path(sys.argv[2]))))")
    done = subprocess.run([sys.executable, "-c", script, str(probe_wasm),
                           str(tmp_path / "data")], capture_output=True, text=True,
                          cwd=REPO, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["peak"] <= got["budget"], (got["peak"] >> 20, got["budget"] >> 20)
    assert got["live"] < 60  # idle actors were let go, past the cap or for memory
    assert got["again"] == MiB  # and come back
    assert got["evicted"] >= 0


def _record(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What the budget's steps do, in order (patched before the host is made: the
    budget's steps are bound when it is)."""
    done: list[str] = []

    def wrap(name: str, fn: Callable[..., Any], when: Callable[..., bool]) -> Any:
        def run(*args: Any) -> Any:
            if when(*args):
                done.append(name)
            return fn(*args)
        return run

    monkeypatch.setattr(SpareInstances, "drop_idle", wrap(
        "spares", SpareInstances.drop_idle, lambda _self, idle_for_s: idle_for_s == 0))
    monkeypatch.setattr(host_module, "release_pool_memory", wrap(
        "pool", host_module.release_pool_memory, lambda *args: len(args) == 1))
    monkeypatch.setattr(host_module, "trim_heap", wrap("trim", trim_heap, lambda: True))
    monkeypatch.setattr(Eviction, "evict_for_memory", wrap(
        "actors", Eviction.evict_for_memory, lambda *_args: True))
    return done


def test_spares_and_pool_pages_go_before_live_actors(
        make_probe: MakeProbe, monkeypatch: pytest.MonkeyPatch) -> None:
    done = _record(monkeypatch)
    p = make_probe(memory_budget_bytes=UNBOUNDED, idle_instance_s=3600,
                   reuse_instances=True)
    for i in range(6):
        p.send(f"a{i}", "GET", "/alloc", query="mb=4")
    assert p.host.eviction.drop_least_recent(2) == 2  # their instances become spares
    assert p.host.spares.count() == 2
    before = evictions()
    set_budget(p, MiB)  # far under what the process holds: everything idle goes
    p.host.memory.check()  # type: ignore[union-attr]
    assert done[:4] == ["spares", "pool", "trim", "actors"], done
    assert p.host.spares.count() == 0 and len(p.host._table) == 0
    assert evictions() - before == 4
    assert p.json("a5", "GET", "/alloc", query="mb=1")["len"] == MiB  # it comes back


def test_an_event_in_flight_is_never_cut_and_a_budget_too_small_says_so(
        make_probe: MakeProbe, caplog: pytest.LogCaptureFixture) -> None:
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen()  # takes the connection, never answers: the event waits in a fetch
    port = silent.getsockname()[1]
    p = make_probe(memory_budget_bytes=UNBOUNDED, idle_instance_s=3600,
                   http=FetchPolicy.parse([f"127.0.0.1:{port}"]))
    for i in range(3):
        p.send(f"idle{i}", "GET", "/now")
    answer: list[Any] = []
    busy = threading.Thread(target=lambda: answer.append(p.send(
        "busy", "POST", "/block", json.dumps({"url": f"http://127.0.0.1:{port}/",
                                              "timeout_ms": 3000}))))
    busy.start()
    try:
        ref = p.host.actor_ref("probe", "busy")
        assert wait_until(lambda: ref in p.host._table.by_ref
                          and p.host._table.by_ref[ref].lock.locked()
                          and p.host._table.by_ref[ref].instance is not None)
        slot = p.host._table.by_ref[ref]
        with caplog.at_level(logging.WARNING, logger="wkhost"):
            set_budget(p, MiB)
            budget = p.host.memory
            assert budget is not None
            budget.check()
            budget.check()
            assert budget.over
            gauges = {m.name: m.samples[0].value for m in registry_of(p.host).collect()
                      if m.samples}
            assert p.host._table.by_ref.get(ref) is slot and slot.instance is not None
            assert all(p.host.actor_ref("probe", f"idle{i}") not in p.host._table.by_ref
                       for i in range(3))
        busy.join(30)
    finally:
        silent.close()
    assert answer and answer[0].status == 200  # served to its end
    assert json.loads(answer[0].body)["error_kind"] == "timeout"
    warned = [r.getMessage() for r in caplog.records
              if "more memory than the budget" in r.getMessage()]
    assert len(warned) == 1 and "--memory-budget 1 MiB" in warned[0], warned
    assert gauges["wkhost_memory_budget_bytes"] == MiB
    assert gauges["wkhost_memory_budget_rss_bytes"] > MiB
    assert gauges["wkhost_memory_over_budget"] == 1
