"""Why a call into a real guest trapped reaches its next event as a value
(`lifecycle.last-trap-info`): each kind of cut answers its kind, an uncaught exception
answers the exception the SDK reported (type, message, traceback), the message is
`last-trap`'s text unchanged, and it is kept across a restart until an event that asked
for it ends cleanly. The guest is tests/guests/trap_info.py."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from wkhost.config import HostConfig
from wkhost.core.host import Host
from wkhost.engine.instance import CPU_BUDGET, NARROWED, WALL_CLOCK
from wkhost.errors import BudgetExceeded, GuestFailed
from wkhost.testing import FakeClock

from ..conftest import BuildGuest
from .support import COMPILED, START_MS, Probe

CLS = "traps"


@pytest.fixture(scope="module")
def trap_info_wasm(build_guest: BuildGuest) -> Path:
    return build_guest("trap_info")


@pytest.fixture
def serve(tmp_path: Path, trap_info_wasm: Path) -> Iterator[Any]:
    """serve(**settings) -> a Probe whose class `traps` is the trap_info guest, on
    tmp_path/data (the same directory each time: a second one is a restart)."""
    hosts: list[Host] = []

    def make(**settings: Any) -> Probe:
        config = HostConfig(data_dir=tmp_path / "data", cache_dir=COMPILED, **settings)
        clock = FakeClock(START_MS)
        host = Host(config, clock)
        hosts.append(host)
        host.add_class(CLS, trap_info_wasm)
        host.start()
        return Probe(host, clock)

    yield make
    with contextlib.ExitStack() as closing:
        for h in reversed(hosts):
            closing.callback(h.close, timeout_s=2)


def info(p: Probe, actor_id: str) -> dict[str, Any]:
    got: dict[str, Any] = p.json(actor_id, "GET", "/info", cls=CLS)
    return got


def trap(p: Probe, actor_id: str, path: str, query: str = "",
         raises: type[GuestFailed] = GuestFailed) -> str:
    with pytest.raises(raises) as failed:
        p.send(actor_id, "POST", path, query=query, cls=CLS)
    return str(failed.value)


def kept(p: Probe, actor_id: str, kind: str, message: str) -> dict[str, Any]:
    """The next event's view of the trap: its kind, the message both functions give."""
    got = info(p, actor_id)
    assert got["text"] == message, got
    assert got["info"] is not None and got["info"]["kind"] == kind, got
    assert got["info"]["message"] == message, got
    return got["info"]  # type: ignore[no-any-return]


def test_a_cpu_cut_answers_cpu(serve: Any) -> None:
    p = serve(cpu_budget_ms=20)
    assert trap(p, "c", "/spin", raises=BudgetExceeded) == CPU_BUDGET
    assert kept(p, "c", "cpu", CPU_BUDGET)["exception"] is None


def test_a_wall_cut_answers_wall(serve: Any) -> None:
    p = serve(cpu_budget_ms=100_000, wall_budget_ms=300)
    assert trap(p, "w", "/spin", raises=BudgetExceeded) == WALL_CLOCK
    assert kept(p, "w", "wall", WALL_CLOCK)["exception"] is None


def test_a_narrowed_deadline_cut_answers_narrowed_deadline(serve: Any) -> None:
    p = serve(cpu_budget_ms=100_000)
    assert trap(p, "n", "/narrow", "ms=200", raises=BudgetExceeded) == NARROWED
    assert kept(p, "n", "narrowed-deadline", NARROWED)["exception"] is None


def test_an_uncaught_exception_answers_guest_with_the_exception(serve: Any) -> None:
    p = serve()
    message = trap(p, "g", "/raise")
    # The reason names the exception, not wasm's `unreachable` (events/trapped.py).
    assert message == "the guest raised trap_info.TrapInfoError: trap_info: raised on purpose"
    exc = kept(p, "g", "guest", message)["exception"]
    assert exc["type_name"] == "trap_info.TrapInfoError", exc
    assert exc["message"] == "trap_info: raised on purpose", exc
    tb = exc["traceback"]
    assert tb.startswith("Traceback (most recent call last):"), tb
    assert "in _raise" in tb and tb.rstrip().endswith(
        "trap_info.TrapInfoError: trap_info: raised on purpose"), tb


def test_a_base_exception_is_reported_too(serve: Any) -> None:
    p = serve()
    message = trap(p, "a", "/abort")
    exc = kept(p, "a", "guest", message)["exception"]
    assert (exc["type_name"], exc["message"]) == ("trap_info.Abort",
                                                  "trap_info: abort requested"), exc


def test_the_memory_cap_answers_memory_with_the_memory_error(serve: Any) -> None:
    p = serve(memory_limit_bytes=96 << 20)
    message = trap(p, "m", "/alloc", "mb=200")
    exc = kept(p, "m", "memory", message)["exception"]
    assert exc is not None and exc["type_name"] == "MemoryError", exc


def test_a_guest_that_writes_the_word_and_traps_otherwise_answers_guest(serve: Any) -> None:
    p = serve()
    message = trap(p, "o", "/says-oom")
    exc = kept(p, "o", "guest", message)["exception"]
    assert exc["type_name"] == "trap_info.TrapInfoError", exc


def test_an_output_flood_answers_output_flood(serve: Any) -> None:
    p = serve(max_guest_output_bytes=2000)
    message = trap(p, "f", "/flood", "n=100000")
    assert message.startswith("the guest's output flooded: "), message
    kept(p, "f", "output-flood", message)


def test_the_reason_is_kept_across_a_restart_until_read_by_a_clean_event(
        serve: Any) -> None:
    p = serve()
    assert p.json("r", "POST", "/keep", cls=CLS) == {"kept": True}  # else its file goes
    message = trap(p, "r", "/raise")
    p.host.close(timeout_s=5)
    again = serve()
    exc = kept(again, "r", "guest", message)["exception"]
    assert exc["type_name"] == "trap_info.TrapInfoError", exc
    assert info(again, "r") == {"text": None, "info": None}  # read, then forgotten


def test_a_later_cut_replaces_the_kept_reason_whole(serve: Any) -> None:
    """A trap that no event has read yet is replaced by the next: a cut that reported
    nothing keeps no exception from the trap before it."""
    p = serve(cpu_budget_ms=20)
    trap(p, "x", "/raise")
    trap(p, "x", "/spin", raises=BudgetExceeded)
    assert kept(p, "x", "cpu", CPU_BUDGET)["exception"] is None
    assert json.dumps(info(p, "x")) == json.dumps({"text": None, "info": None})
