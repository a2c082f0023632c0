"""A cluster durable write the store refuses ends its event once (issue 39, item 4): the
trap it makes is of the host's kind LEASE_LOST, the event's caller hears the copy's
LeaseLost (never the guest's trap), one line says so (settle's), and the guest's next
event reads the trap as `host`, as it always has (the WIT has no lease-lost case).

The copy is a fake that refuses on demand (the real one against PostgreSQL is
tests/cluster/test_replication.py), given to a real Host as its cluster node's
replication, with the trap_info guest."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from wkhost.config import HostConfig
from wkhost.core.host import Host
from wkhost.errors import LeaseLost
from wkhost.storage import host_rows
from wkhost.testing import FakeClock
from wkhost.traps import TrapKind
from wkhost.types import ActorRef

from ..conftest import BuildGuest
from .support import COMPILED, START_MS, Probe

CLS = "traps"
REFUSED = "traps/r's write was refused by the store: another node holds its shard now"


class RefusingCopy:
    """A working copy whose durable writes the store refuses once `refuse` is set."""

    def __init__(self) -> None:
        self.refuse = False
        self.lost: Exception | None = None
        self.lazies = 0

    def durable(self, db: Any) -> None:
        if self.refuse:
            self.lost = LeaseLost(REFUSED)
            raise self.lost

    def lazy(self, db: Any) -> None:
        self.lazies += 1

    def deleted(self) -> None:
        pass


class OneCopy:
    """The replication as an event asks it: every actor's copy is the one copy."""

    def __init__(self) -> None:
        self.copy = RefusingCopy()

    def prepare(self, ref: ActorRef, path: Path, close: Callable[[], Any]) -> None:
        pass

    def copy_of(self, ref: ActorRef) -> RefusingCopy:
        return self.copy


class Node:
    def __init__(self, config: HostConfig) -> None:
        self.placement = config.partition
        self.replication = OneCopy()


@pytest.fixture(scope="module")
def trap_info_wasm(build_guest: BuildGuest) -> Path:
    return build_guest("trap_info")


@pytest.fixture
def served(tmp_path: Path, trap_info_wasm: Path) -> Iterator[tuple[Probe, RefusingCopy]]:
    config = HostConfig(data_dir=tmp_path / "data", cache_dir=COMPILED)
    node = Node(config)
    host = Host(config, FakeClock(START_MS), cluster=node)  # type: ignore[arg-type]
    try:
        host.add_class(CLS, trap_info_wasm)
        host.start()
        yield Probe(host, host.clock), node.replication.copy  # type: ignore[arg-type]
    finally:
        host.close(timeout_s=2)


def test_a_refused_durable_write_ends_its_event_once_as_lease_lost(
        served: tuple[Probe, RefusingCopy], caplog: pytest.LogCaptureFixture) -> None:
    p, copy = served
    assert p.json("r", "POST", "/keep-durable", cls=CLS) == {"kept": True}
    assert copy.lazies == 1  # settle ships the rest through the copy itself
    copy.refuse = True
    with caplog.at_level(logging.INFO, logger="wkhost"), pytest.raises(LeaseLost) as heard:
        p.send("r", "POST", "/keep-durable", cls=CLS)
    assert str(heard.value) == REFUSED  # the copy's refusal, not the guest's trap
    lines = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(lines) == 1, [r.getMessage() for r in lines]
    assert "its request event trapped" in lines[0].getMessage()
    slot = p.host._table.by_ref[ActorRef(CLS, "r")]
    assert slot.last_trap is not None and slot.last_trap.kind is TrapKind.LEASE_LOST
    assert slot.db is not None
    kept = json.loads(str(host_rows.read_meta(slot.db)["trap_detail"]))
    assert kept["kind"] == "host"  # stored as a wkhost before the kind kept it

    copy.refuse, copy.lost = False, None  # as a restored copy would be
    info = p.json("r", "GET", "/info", cls=CLS)
    assert info["info"]["kind"] == "host", info
    assert "LeaseLost" in info["text"], info


def test_a_copy_lost_beside_an_answer_fails_the_event_with_its_refusal(
        served: tuple[Probe, RefusingCopy]) -> None:
    """A refusal the guest's calls never met (an earlier event's lazy write, refused
    while this one ran) still keeps its answer from being acknowledged."""
    p, copy = served
    assert p.json("r", "POST", "/keep", cls=CLS) == {"kept": True}
    copy.lost = LeaseLost(REFUSED)
    with pytest.raises(LeaseLost, match="refused by the store"):
        p.send("r", "GET", "/info", cls=CLS)


def test_an_alarm_event_whose_write_is_refused_logs_one_line(
        served: tuple[Probe, RefusingCopy], caplog: pytest.LogCaptureFixture) -> None:
    """Its trap's line alone: not also an alarm 'retrying' (the retry only paces the next
    try here) nor 'not run here' (it ran)."""
    p, copy = served
    at = p.clock.now_ms() + 1000
    assert p.json("a", "POST", "/alarm", query=f"at={at}", cls=CLS) == {"at": at}
    copy.refuse = True
    with caplog.at_level(logging.INFO, logger="wkhost"):
        p.clock.jump(1000)
        assert p.host.alarms.scheduler.wait_settled(10)
    assert copy.lost is not None  # its on-alarm's durable write was refused
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO]
    assert len(lines) == 1, lines
    assert "traps/a: its alarm event trapped" in lines[0], lines


def test_an_alarm_event_failed_by_a_refusal_it_did_not_trap_on_says_so(
        served: tuple[Probe, RefusingCopy], caplog: pytest.LogCaptureFixture) -> None:
    """A refusal the guest's calls never met (a lazy write's, seen during the event) has
    no trap's line to report it: the alarm's own line does."""
    p, copy = served
    at = p.clock.now_ms() + 1000
    assert p.json("a", "POST", "/alarm", query=f"at={at}", cls=CLS) == {"at": at}
    copy.lost = LeaseLost(REFUSED)  # its on-alarm's durable write goes through
    with caplog.at_level(logging.INFO, logger="wkhost"):
        p.clock.jump(1000)
        assert p.host.alarms.scheduler.wait_settled(10)
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO]
    assert lines == [f"traps/a: alarm not run here: {REFUSED}"], lines
