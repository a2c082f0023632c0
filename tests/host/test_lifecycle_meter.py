"""lifecycle.fuel-used, now-and-fuel and holder, read by a real component on a real host; and
attributes.publish, listed from the index after the event."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from wkhost.config import HostConfig
from wkhost.core.host import Host
from wkhost.errors import GuestFailed
from wkhost.testing import FakeClock
from wkhost.types import Request, Sender

from ..conftest import BuildGuest
from .support import COMPILED, START_MS


@pytest.fixture
def meter(tmp_path: Path, build_guest: BuildGuest) -> Iterator[Host]:
    host = Host(HostConfig(data_dir=tmp_path / "data", cache_dir=COMPILED),
                FakeClock(START_MS))
    try:
        host.add_class("meter", build_guest("meter"))
        host.start()
        yield host
    finally:
        host.close(timeout_s=2)


def _meter(host: Host, n: int, actor_id: str = "m") -> dict[str, object]:
    ref = host.actor_ref("meter", actor_id)
    resp = host.request(ref, Request("GET", "/meter", f"n={n}", [], b""), Sender.operator())
    assert resp.status == 200, resp.body[:300]
    out: dict[str, object] = json.loads(resp.body)
    return out


def test_fuel_used_grows_with_the_guest_work_and_starts_again_each_call(meter: Host) -> None:
    _meter(meter, 0)  # the actor's creation, and a first call's warming up
    small, big = _meter(meter, 1000), _meter(meter, 200_000)
    fuel = {k: (int(str(r["before"])), int(str(r["after"]))) for k, r in
            (("small", small), ("big", big))}
    for before, after in fuel.values():
        assert 0 < before < after <= meter.config.fuel_per_event()
    small_loop = fuel["small"][1] - fuel["small"][0]
    big_loop = fuel["big"][1] - fuel["big"][0]
    assert big_loop > 100 * small_loop
    # Each call is metered from its own start, not from the first call's.
    assert fuel["big"][0] < fuel["small"][1]


def test_now_and_fuel_reads_both_in_one_call(meter: Host) -> None:
    _meter(meter, 0)
    got = _meter(meter, 1000)
    now, fuel = got["now_and_fuel"]  # type: ignore[misc]
    assert now == got["now"] == START_MS  # the fake clock stands still
    assert int(str(got["after"])) < fuel <= meter.config.fuel_per_event()


def test_holder_names_this_process(meter: Host) -> None:
    assert _meter(meter, 0)["holder"] == f"process 0 of 1 (pid {os.getpid()})"


def _publish(host: Host, actor_id: str, **msg: object) -> tuple[int, dict[str, object]]:
    ref = host.actor_ref("meter", actor_id)
    resp = host.request(ref, Request("POST", "/publish", "", [], json.dumps(msg).encode()),
                        Sender.operator())
    return resp.status, (json.loads(resp.body) if resp.status == 200 else {})


def _listed(host: Host, **q: object) -> list[tuple[str, str | None, int | None]]:
    from wkhost.storage.listing import ListQuery

    rows, _ = host.list_page(ListQuery("meter", **q))  # type: ignore[arg-type]
    return [(r.id, r.status, r.updated_ms) for r in rows]


def test_published_attributes_are_listed_by_status_and_label(meter: Host) -> None:
    assert _publish(meter, "a", status="blue", at=5, labels={"team": "x"}, write=True) == (
        200, {"ok": True})
    assert _publish(meter, "b", status="blue", at=6, labels={"team": "y"}) == (
        200, {"ok": True})  # no write follows: committed at the event's end
    assert _listed(meter, statuses=("blue",)) == [("a", "blue", 5), ("b", "blue", 6)]
    assert _listed(meter, labels=(("team", "y"),)) == [("b", "blue", 6)]
    # labels None keeps those published before
    assert _publish(meter, "a", status="green", at=7, labels=None)[0] == 200
    assert _listed(meter, labels=(("team", "x"),)) == [("a", "green", 7)]


def test_a_trapped_event_publishes_nothing_and_bad_ones_are_refused(meter: Host) -> None:
    assert _publish(meter, "c", status="first", at=1)[0] == 200
    with pytest.raises(GuestFailed,
                       match="the guest raised meter.Trap: meter: trap after publishing"):
        _publish(meter, "c", status="second", at=2, trap=True)
    assert _listed(meter, statuses=("first", "second")) == [("c", "first", 1)]
    status, out = _publish(meter, "c", status="x" * 65, at=3)
    assert status == 200 and "1 to 64 bytes" in str(out["error"])
    assert _listed(meter, statuses=("first",)) == [("c", "first", 1)]
