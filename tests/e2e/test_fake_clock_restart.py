"""`serve --fake-clock` never goes back across a restart on the same data directory
(issue 36, item 12): moved a day ahead, stopped (cleanly, or by kill -9), and served
again, the clock reads at least what it read before, for the host and for its guests,
in one process and in each of `--processes 2`."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
from wkhost.partition import Partition

from .conftest import MakeServer
from .server import Server

DAY = 86_400_000
IDS = ("o1", "o2")  # one on each process of --processes 2


def test_the_ids_are_one_on_each_of_two_processes() -> None:
    assert sorted(Partition(0, 2).owner(i) for i in IDS) == [0, 1]


def guest_now(server: Server, actor_id: str) -> int:
    status, doc = server.actor("probe", actor_id, "GET", "/now")
    assert status == 200, doc
    return int(doc["now"])


def host_now(server: Server) -> int:
    return server.advance(0, settle_ms=0)


Stop = Callable[[Server], object]


@pytest.mark.parametrize("stop", [Server.stop, Server.kill9], ids=["sigterm", "kill-9"])
@pytest.mark.parametrize("processes", [1, 2])
def test_a_clock_moved_ahead_is_not_behind_after_a_restart(
        make_server: MakeServer, tmp_path: Path, stop: Stop, processes: int) -> None:
    extra = ["--processes", str(processes)] if processes > 1 else []
    first = make_server(data=tmp_path / "data", extra=extra)
    started = min(guest_now(first, i) for i in IDS)
    moved = first.advance(DAY, settle_ms=0)
    assert moved >= started + DAY
    seen = max([moved, *(guest_now(first, i) for i in IDS)])
    stop(first)

    again = make_server(data=tmp_path / "data", extra=extra)
    assert host_now(again) >= seen
    for i in IDS:  # every process's clock, as its guests see it
        assert guest_now(again, i) >= seen
    # ... and it still moves only when told: forward from there.
    assert again.advance(1000, settle_ms=0) >= seen + 1000


def test_a_clock_never_moved_starts_at_the_real_time_again(
        make_server: MakeServer, tmp_path: Path) -> None:
    first = make_server(data=tmp_path / "data")
    before = guest_now(first, "o1")
    first.stop()
    real = time.time_ns() // 1_000_000
    again = make_server(data=tmp_path / "data")
    assert guest_now(again, "o1") >= max(before, real)
