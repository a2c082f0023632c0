"""Budgets cut runaway guests, WASI grants nothing, big bodies cross fast, output is logged."""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import threading
import time

import pytest
from wkhost.engine.components import ticker_for
from wkhost.errors import BudgetExceeded, GuestFailed

from .support import MakeProbe, Probe


def test_the_fuel_budget_cuts_a_busy_loop(make_probe: MakeProbe) -> None:
    p = make_probe(cpu_budget_ms=20)
    with pytest.raises(BudgetExceeded, match="CPU budget"):
        p.send("spin", "POST", "/spin")
    assert p.json("spin", "GET", "/now")["now"] == p.clock.now_ms()  # served again


def test_the_wall_budget_cuts_a_guest_that_never_yields(make_probe: MakeProbe) -> None:
    # The fake clock never moves, so /spin-wall loops until the epoch deadline.
    p = make_probe(cpu_budget_ms=100_000, wall_budget_ms=300)
    started = time.monotonic()
    with pytest.raises(BudgetExceeded, match="wall-clock"):
        p.send("w", "POST", "/spin-wall", query="ms=100000000")
    assert 0.25 < time.monotonic() - started < 10  # cut near 300 ms, not run on


def test_the_wall_budget_cuts_a_guest_that_starts_while_the_ticker_sleeps(
        make_probe: MakeProbe) -> None:
    # An idle host's epoch ticker sleeps; the next call into a guest wakes it.
    p = make_probe(cpu_budget_ms=100_000, wall_budget_ms=300)
    assert p.json("w", "GET", "/now")["now"] == p.clock.now_ms()
    ticker = ticker_for(p.host.engine)
    until = time.monotonic() + 10
    while not ticker.asleep and time.monotonic() < until:
        time.sleep(0.01)
    assert ticker.asleep
    started = time.monotonic()
    with pytest.raises(BudgetExceeded, match="wall-clock"):
        p.send("w", "POST", "/spin-wall", query="ms=100000000")
    assert 0.25 < time.monotonic() - started < 10


def test_the_wall_deadline_bounds_a_blocking_host_call(make_probe: MakeProbe) -> None:
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen()  # accepts the connection, never answers
    port = silent.getsockname()[1]
    from wkhost.fetch import FetchPolicy

    p = make_probe(wall_budget_ms=400, http=FetchPolicy.parse([f"127.0.0.1:{port}"]))
    started = time.monotonic()
    try:
        resp = p.send("b", "POST", "/block",
                      json.dumps({"url": f"http://127.0.0.1:{port}/", "timeout_ms": 60_000}))
        # Either the fetch's timeout came back as an error the guest reported, or the
        # event ran out of wall time right after: both within the 400 ms budget.
        assert resp.status == 200 and json.loads(resp.body)["error_kind"] == "timeout"
    except BudgetExceeded:
        pass
    finally:
        silent.close()
    assert time.monotonic() - started < 10  # the 400 ms budget, not the 60 s timeout


def test_the_memory_cap_stops_a_memory_bomb(make_probe: MakeProbe) -> None:
    p = make_probe(memory_limit_bytes=96 << 20)
    assert p.json("m", "POST", "/alloc", query="mb=8")["len"] == 8 << 20
    with pytest.raises(GuestFailed):
        p.send("m", "POST", "/alloc", query="mb=200")
    assert p.json("m", "POST", "/alloc", query="mb=8")["len"] == 8 << 20


def test_wasi_grants_no_files_no_environment_no_sockets(probe: Probe) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    accepted: list[object] = []
    listener.settimeout(1.0)
    t = threading.Thread(target=lambda: _accept(listener, accepted))
    t.start()
    try:
        port = listener.getsockname()[1]
        report = probe.json("w", "GET", "/wasi", query=f"port={port}")
    finally:
        t.join()
        listener.close()
    assert {k: v["ok"] for k, v in report.items()} == {
        "read_passwd": False, "listdir_root": False, "environ": False, "socket": False}
    assert accepted == []


def _accept(listener: socket.socket, accepted: list[object]) -> None:
    with contextlib.suppress(OSError):
        accepted.append(listener.accept())


def test_a_one_mib_body_round_trips_intact(probe: Probe) -> None:
    # Its speed is measured in bench/ (bench_core.py), not asserted here.
    body = bytes(range(256)) * 4096
    resp = probe.send("e", "GET", "/echo", body)
    assert resp.body == body
    assert dict(resp.headers)["x-len"] == str(len(body))


def test_bodies_over_the_cap_are_refused_with_the_cap_named(make_probe: MakeProbe) -> None:
    from wkhost.errors import TooLarge

    p = make_probe(max_body_bytes=1 << 20)
    with pytest.raises(TooLarge, match="1048576"):
        p.send("e", "GET", "/echo", b"x" * ((1 << 20) + 1))
    with pytest.raises(GuestFailed, match="over the 1048576-byte cap"):
        p.send("e", "GET", "/big", query="kb=1025")


def test_guest_output_is_captured_capped_and_logged_with_the_actor(
        make_probe: MakeProbe, caplog: pytest.LogCaptureFixture) -> None:
    p = make_probe(max_guest_output_bytes=1000)
    with caplog.at_level(logging.INFO, logger="wkhost.guest"):
        # 60 lines to each stream, about 2 KB: past the cap, in fewer dropped writes
        # than make a flood (see the next test).
        p.json("out", "POST", "/print", query="n=60")
    lines = [r.getMessage() for r in caplog.records if r.name.startswith("wkhost.guest")]
    assert any(line.startswith("[probe/out] probe stdout 0") for line in lines)
    assert any("more bytes of output dropped" in line for line in lines)
    assert sum(len(line) for line in lines) < 2000


def test_an_output_flood_fails_the_guests_writes_and_its_neighbour_is_served(
        make_probe: MakeProbe, caplog: pytest.LogCaptureFixture) -> None:
    """A write past the output pipe fails (host/engine/guest_output.py), so the guest's own
    code pays for a flood. The probe does not handle the error: its event ends with it."""
    p = make_probe(max_guest_output_bytes=2000)
    with caplog.at_level(logging.INFO, logger="wkhost.guest"), \
            pytest.raises(GuestFailed, match="output flooded"):
        p.json("flood", "POST", "/print", query="n=100000")
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("writes past it fail" in m for m in warnings), warnings
    assert p.json("neighbour", "POST", "/print", query="n=3") == {"printed": 3}


def test_output_pipes_close_with_their_instances(make_probe: MakeProbe) -> None:
    """Each instance's output pipe (host/engine/guest_output.py) is closed once its Store is
    gone, its write ends by wasmtime itself: instances made and dropped leave no file
    descriptor behind."""
    import gc
    import os

    p = make_probe()

    def open_fds() -> int:
        gc.collect()
        return len(os.listdir("/proc/self/fd"))

    p.json("warm-up", "POST", "/print", query="n=1")
    p.host.evict_idle(keep=0)
    before = open_fds()
    for i in range(30):
        assert p.json(f"printer-{i}", "POST", "/print", query="n=2") == {"printed": 2}
        with contextlib.suppress(GuestFailed):
            p.send(f"trapper-{i}", "POST", "/trap")
    p.host.evict_idle(keep=0)
    p.host.spares.drop_idle(0)
    assert open_fds() <= before + 2, (before, os.listdir("/proc/self/fd"))
