"""Held answers are spoken on both sides of the WIT boundary, which can share no module: the
guest's workflow protocol (wkguest.workflow.protocol) writes the `wk-hold-*` headers and
reads back the state, the host (wkhost.events.holds) parses them and delivers the state again.
Each side spells them itself, so this checks that the two spellings and limits agree."""

from __future__ import annotations

from wkguest.workflow import cbor, start_route
from wkguest.workflow import protocol as guest
from wkguest.workflow.core.config import Config
from wkguest.workflow.runner import Runner
from wkguest.workflow.status import PREFIX
from wkguest.workflow.testing import FakeBackend
from wkhost.events import holds as host


def test_both_sides_name_the_same_headers() -> None:
    assert guest.HOLD_MS == host.HOLD_MS
    assert guest.HOLD_STATE == host.HOLD_STATE
    # the host matches the names lowercased: the guest's must already be
    assert all(h.islower() for h in (guest.HOLD_MS, guest.HOLD_STATE))
    assert host.is_hold_header(guest.HOLD_MS) and host.is_hold_header(guest.HOLD_STATE)


def _handle(route: str, msg: dict[str, object]) -> guest.Reply:
    """The guest's answer to a request from an actor, the instance waiting (unfinished)."""
    runner = Runner(lambda run, inp: run.wait_for_event("never", 10**9), Config(),
                    FakeBackend())
    runner.init()
    return guest.Protocol(runner).handle("POST", PREFIX + route, cbor.dumps(msg), "actor")


def test_the_host_takes_a_held_start_with_the_guests_state() -> None:
    reply = _handle("start", {"input": 1, "wait_ms": 5000})
    assert host.parse_hold(reply.headers) == (5000, start_route._CREATED)


def test_a_guest_hold_longer_than_the_hosts_limit_is_cut_to_it() -> None:
    reply = _handle("start", {"input": 1, "wait_ms": 2**63 - 1})  # the most the guest takes
    assert host.parse_hold(reply.headers) == (host.MAX_HOLD_MS, start_route._CREATED)
