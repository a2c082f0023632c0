"""Signal-with-start under kill -9 (with_start.py), through a real server: a kill at each
statement of the start's transaction leaves neither the instance nor its event, and the
client's retry then starts it with its one event; a kill after the COMMIT leaves both:
the retry delivers the event again (as a retried `event` would), or finds the order
finished with the first (409): nothing is lost.

The guest is tests/guests/kit_awaited.py (an order waits for "ship")."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from . import reliability_support
from .reliability_support import HostDown, Launch

launch = reliability_support.launch  # the fixture, by name
CLS = "orders"
START = {"input": 10, "event": {"name": "ship", "payload": "now"}}

# (crash point, whether the start's transaction had committed when it struck)
POINTS = [("sql-after:wk:with-start-begin", False), ("sql-after:wk:event", False),
          ("sql-after:wk:create", False), ("sql-before:wk:with-start-commit", False),
          ("sql-after:wk:with-start-commit", True)]


@pytest.fixture(scope="module")
def wasm(build_guest: Callable[[str], Path]) -> dict[str, Path]:
    return {CLS: build_guest("kit_awaited")}


@pytest.mark.parametrize("point, committed", POINTS, ids=[p for p, _ in POINTS])
def test_a_kill_inside_a_start_with_an_event(launch: Launch, wasm: dict[str, Path],
                                             tmp_path: Path, point: str,
                                             committed: bool) -> None:
    data = tmp_path / "data"
    host = launch(wasm, data, crash_at=point, access={})
    with pytest.raises(HostDown):
        host.wk(CLS, "o1", "start", START)
    assert host.crashed_at(point), host.log[-20:]

    host = launch(wasm, data, access={})
    code, st = host.wk(CLS, "o1", "status")
    assert (code == 200) == committed, st  # before the COMMIT: no instance at all
    code, retried = host.wk(CLS, "o1", "start", START)  # the client's retry
    if committed:  # found: delivered again (200), or refused once the order, restarted
        # by its alarm, had taken the first one and finished (409 finished)
        assert (code, retried.get("created")) in ((200, False), (409, None)), retried
    else:
        assert code == 200 and retried["created"] is True, retried
    code, st = host.wk(CLS, "o1", "status", {"wait_ms": 20_000})
    assert code == 200 and st["state"] == "completed" and st["output"] == {"order": 10}
    # One event taken; a retry that found the order running delivered it a second time.
    assert st["events_pending"] == (1 if retried.get("created") is False else 0), st
