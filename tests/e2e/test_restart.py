"""Stops and restarts on the same data directory keep every actor and every alarm."""

from __future__ import annotations

import time

from .conftest import MakeServer

DAY = 86_400_000


def alarms_fired(s, actor_id: str) -> int:  # type: ignore[no-untyped-def]
    status, body = s.actor("probe", actor_id, "GET", "/log")
    return sum(1 for kind, _ in body["rows"] if kind == "alarm")


def wait_for(cond, timeout: float = 15) -> bool:  # type: ignore[no-untyped-def]
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.05)
    return False


def test_a_graceful_restart_keeps_alarms(make_server: MakeServer, tmp_path) -> None:  # type: ignore[no-untyped-def]
    data = tmp_path / "g"
    s = make_server(data=data)
    now = s.advance(0)
    s.actor("probe", "k", "POST", "/alarm/set", query=f"at={now + DAY}")
    assert s.stop() == 0
    assert any("stopped cleanly" in line for line in s.log)
    s2 = make_server(data=data)
    assert not any("not clean" in line for line in s2.log)
    s2.advance(2 * DAY)  # past the alarm (the fake clock resumes where it was)
    assert wait_for(lambda: alarms_fired(s2, "k") == 1)


def test_kill_9_then_restart_rebuilds_and_fires(make_server: MakeServer, tmp_path) -> None:  # type: ignore[no-untyped-def]
    data = tmp_path / "k9"
    s = make_server(data=data)
    now = s.advance(0)
    for i in range(5):
        s.actor("probe", f"a{i}", "POST", "/alarm/set", query=f"at={now + DAY + i}")
    s.kill9()
    s2 = make_server(data=data)
    assert wait_for(lambda: any("not clean" in line for line in s2.log), 5)
    s2.advance(2 * DAY)
    assert wait_for(lambda: all(alarms_fired(s2, f"a{i}") == 1 for i in range(5)))
