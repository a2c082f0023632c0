"""kill -9 at named crash points, then a restart on the same data: nothing acknowledged is
lost, no unfinished instance is left without its alarm, no recorded step runs again, and
every step that ran twice was counted (at-least-once, bounded).

The switch is host/testing/crashpoints.py (WKHOST_CRASH_AT, WKHOST_CRASH_SKIP on the `wkhost
serve` process): the runner tags its statements (/*wk:result*/ ...), the host kills
itself with SIGKILL at the named hit. The restart runs without the switch.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from wkhost.storage import paths

from . import reliability_support
from .reliability_support import (
    DAY,
    HOUR,
    RETENTION,
    Fleet,
    HostDown,
    Launch,
    Order,
    shop,
    wait_until,
)

pytestmark = pytest.mark.e2e

# the fixtures, by name (tests/e2e/conftest.py is shared with other suites)
launch = reliability_support.launch
shop_wasm = reliability_support.shop_wasm


def three_orders() -> list[Order]:
    """A plain order, one whose pack traps once and whose charge fails once, and one
    with a flaky charge and a notification service that is down."""
    return [Order("o-plain"),
            Order("o-trap", {"trap_in_pack": True, "charge_failures": 1}),
            Order("o-flaky", {"charge_failures": 2, "notify_fails": True})]


def extra_runs(fleet: Fleet, calls: dict[tuple[str, str], int]) -> dict[str, int]:
    """Steps that ran more often than they need to: {"oid/step": how many more}."""
    out = {}
    for o in fleet.orders.values():
        for st in o.steps:
            if st["kind"] == "step":
                more = calls.get(o.key_of(st), 0) - o.expected_calls(st["name"])
                if more:
                    out[f"{o.oid}/{st['name']}"] = more
    return out


# (point, skip, what issue 6 calls it)
NAMED_POINTS = [
    ("sql-after:wk:attempt", 0, "after a step's attempt is counted, before f runs"),
    ("call:ledger", 0, "inside f (the step's call to the ledger, before it runs)"),
    ("call:ledger", 5, "inside f, a later step (a charge or a pack)"),
    ("sql-before:wk:result", 0, "after f, before its result is recorded"),
    ("sql-before:wk:result", 4, "after f, before its result is recorded (a later step)"),
    ("sql-after:wk:result", 0, "after the result is recorded, before the alarm is re-set"),
    ("sql-before:wk:sleep", 0, "during a sleep's wake-time write (before)"),
    ("sql-after:wk:sleep", 0, "during a sleep's wake-time write (after)"),
    ("sql-before:wk:event", 0, "an event received, before it is recorded"),
    ("sql-after:wk:event", 0, "an event recorded, before the answer and the run"),
    # More of the runner's durable writes, beyond the list of issue 6.
    ("sql-after:wk:create", 1, "a start recorded, before it is answered"),
    ("sql-after:wk:begin-run", 2, "a run counted as bad, before it runs anything"),
    ("sql-after:wk:wait", 0, "a wait's deadline recorded"),
    ("sql-after:wk:take-event", 0, "an event taken by its wait"),
    ("sql-after:wk:step-error", 0, "a step's final error recorded (try_step)"),
    ("sql-after:wk:end-run", 3, "where a run stopped recorded, before its alarm"),
    ("sql-before:wk:finish", 0, "the output computed, before it is recorded"),
]


def killed_at(point: str, skip: int, fleet: Fleet, launch: Launch,
              shop_wasm: dict[str, Path], data: Path) -> HostDown:
    """Drive `fleet` on a host that kills itself at `point` (after `skip` hits)."""
    host = launch(shop(shop_wasm), data, crash_at=point, skip=skip)
    fleet.attach(host)
    down = fleet.pump_until_down()
    assert host.crashed_at(point), host.log[-20:]
    return down


def point_ids(points: list[tuple[str, int, str]]) -> list[str]:
    return [f"{p}+{s}" for p, s, _ in points]


@pytest.mark.parametrize("point,skip,what", NAMED_POINTS, ids=point_ids(NAMED_POINTS))
def test_a_kill_at_a_named_point_loses_nothing(point: str, skip: int, what: str,
                                               launch: Launch, shop_wasm: dict[str, Path],
                                               tmp_path: Path) -> None:
    data = tmp_path / "data"
    fleet = Fleet(three_orders())
    down = killed_at(point, skip, fleet, launch, shop_wasm, data)
    snap = fleet.record_kill(down, data)

    fleet.attach(launch(shop(shop_wasm), data))
    fleet.pump()
    calls = fleet.verify()
    more = extra_runs(fleet, calls)
    assert sum(more.values()) <= len(fleet.orders), more  # one kill: once more at most each

    if point == "sql-before:wk:result":  # the step whose result was never recorded ran again
        assert more, "a step cut after f returned must run again"
    if point == "sql-after:wk:result":
        recorded = [s for a in snap.values() for s in a.steps if s["kind"] in "ST"]
        assert recorded, "the kill came after a result was recorded"
    if point == "sql-after:wk:sleep":
        _check_sleep_kept_its_wake_time(fleet, snap)
    if point in ("sql-before:wk:event", "sql-after:wk:event"):
        _check_the_unanswered_event(fleet, snap, point)


# A start that waits runs the new instance's first run in its own event, and its insert
# is not synced by itself: the kill comes inside that event, before any answer.
WAITING_START_POINTS = [
    ("sql-after:wk:create", 0, "the instance inserted, its first run begun"),
    ("sql-after:wk:attempt", 0, "the first run's first attempt counted"),
    ("sql-before:wk:result", 0, "the first run's first step returned, not recorded"),
    ("sql-after:wk:result", 1, "the first run's second step recorded"),
]


@pytest.mark.parametrize("point,skip,what", WAITING_START_POINTS,
                         ids=point_ids(WAITING_START_POINTS))
def test_a_kill_in_a_waiting_starts_first_run_loses_nothing(
        point: str, skip: int, what: str, launch: Launch, shop_wasm: dict[str, Path],
        tmp_path: Path) -> None:
    data = tmp_path / "data"
    fleet = Fleet(three_orders(), start_wait_ms=50)
    down = killed_at(point, skip, fleet, launch, shop_wasm, data)
    cut = [o for o in fleet.orders.values()
           if o.run_id is None and o.starts > o.trapped_starts]
    assert len(cut) == 1, "the kill came inside a start, before its answer"
    snap = fleet.record_kill(down, data)
    assert ("orders", cut[0].oid) in snap  # kill -9 keeps what was committed

    fleet.attach(launch(shop(shop_wasm), data))
    fleet.pump()  # the cut start is sent again: it finds the instance, which goes on
    calls = fleet.verify()
    more = extra_runs(fleet, calls)
    assert sum(more.values()) <= 1, more
    assert cut[0].starts == 2 + cut[0].trapped_starts
    if cut[0].oid != "o-trap":
        # The order whose pack traps once trapped its start's first run: answered 500,
        # and sent again, the start found its instance, which went on from its alarm.
        assert fleet.orders["o-trap"].trapped_starts == 1


def _check_sleep_kept_its_wake_time(fleet: Fleet, snap: dict[Any, Any]) -> None:
    """The wake time recorded before the kill is the one the sleep kept: a replay never
    restarts a sleep."""
    found = 0
    for o in fleet.orders.values():
        a = snap.get(("orders", o.oid))
        before = [s for s in (a.steps if a else []) if s["kind"] == "w"]
        if before:
            after = [s for s in o.steps if s["kind"] == "sleep"]
            assert after and after[0]["wake_at"] == before[0]["wake_at"], (o.oid, before, after)
            found += 1
    assert found, "the kill came after a wake time was recorded"


def _check_the_unanswered_event(fleet: Fleet, snap: dict[Any, Any], point: str) -> None:
    cut = [o for o in fleet.orders.values() if o.event_unacked or o.sends > 1]
    assert len(cut) == 1, [(o.oid, o.sends, o.event_recorded) for o in fleet.orders.values()]
    o = cut[0]
    pending = [e for e in snap[("orders", o.oid)].events if e["name"] == "approved"]
    if point == "sql-before:wk:event":
        # Not recorded: the client, who got no answer, sent it again after the restart.
        assert not pending and o.sends == 2 and o.event_acked
    else:
        # Recorded (durably) with the alarm set to now before it: after the restart the
        # instance took it by itself; sending it again would have been a duplicate.
        assert len(pending) == 1 and o.sends == 1 and not o.event_acked
    assert o.final is not None and o.final["output"]["approved_by"] == o.approver


@pytest.mark.parametrize("point", ["sql-after:wk:schema", "init:orders"])
def test_a_kill_during_on_init_leaves_no_half_made_instance(point: str, launch: Launch,
                                                            shop_wasm: dict[str, Path],
                                                            tmp_path: Path) -> None:
    data = tmp_path / "data"
    fleet = Fleet([Order("o-init"), Order("o-next")])
    host = launch(shop(shop_wasm), data, crash_at=point)
    fleet.attach(host)
    down = fleet.pump_until_down()
    assert host.crashed_at(point)
    o = fleet.orders["o-init"]
    assert o.starts == 1 and o.run_id is None  # the start was never answered
    snap = fleet.record_kill(down, data)
    half = snap[("orders", "o-init")]
    assert not half.initialized  # on-init did not finish: the actor was never created

    host = launch(shop(shop_wasm), data)
    assert "o-init" not in host.ids("orders")  # the restart removed the half-made one
    assert not paths.db_path(data, "orders", "o-init").exists()
    fleet.attach(host)
    fleet.pump()
    fleet.verify()
    assert o.starts == 2


def test_a_kill_during_a_retention_delete(launch: Launch, shop_wasm: dict[str, Path],
                                          tmp_path: Path) -> None:
    data = tmp_path / "data"
    fleet = Fleet([Order("r1"), Order("r2", {"trap_in_pack": True})])
    host = launch(shop(shop_wasm), data, crash_at="delete:orders")
    fleet.attach(host)
    fleet.pump()
    calls = fleet.verify()
    assert sorted(host.ids("orders")) == ["r1", "r2"]

    fleet.advance(RETENTION + HOUR)  # the retention alarms fire; the first delete kills
    rc = host.wait_exit(30)
    assert rc == -9 and host.crashed_at("delete:orders"), (rc, host.log[-10:])
    snap = fleet.record_kill(HostDown(rc), data)
    assert {k for k in snap if k[0] == "orders"} == {("orders", "r1"), ("orders", "r2")}
    assert all(a.wf is not None and a.wf["state"] == "completed"
               for k, a in snap.items() if k[0] == "orders")

    host = launch(shop(shop_wasm), data)
    fleet.attach(host)  # the clock back past the retention: the alarms fire again
    wait_until(lambda: host.ids("orders") == [], timeout=10,
               what="both orders deleted after the restart")
    for oid in ("r1", "r2"):
        assert not paths.db_path(data, "orders", oid).exists()
        code, doc = host.wk("orders", oid, "status")
        assert code == 404 and doc["error"] == "unknown", (code, doc)
    assert host.ids("orders") == []  # asking about them left nothing behind
    assert fleet.ledger_calls() == calls  # nothing ran again


def test_a_kill_during_delete_self(launch: Launch, shop_wasm: dict[str, Path],
                                   tmp_path: Path) -> None:
    data = tmp_path / "data"
    probe = {"probe": shop_wasm["probe"]}
    host = launch(probe, data, crash_at="delete:probe", access={})
    now = host.clock(0)
    for aid in ("keep", "gone"):
        status, body = host.json("probe", aid, "POST", "/sql", {
            "sql": "CREATE TABLE t (x); INSERT INTO t VALUES (42)", "durable": True})
        assert status == 200 and "error" not in body, body
        assert host.json("probe", aid, "POST", "/alarm/set", query=f"at={now + DAY}")[0] == 200
    with pytest.raises(HostDown) as died:
        host.json("probe", "gone", "POST", "/delete-self")
    assert died.value.rc == -9 and host.crashed_at("delete:probe")

    host = launch(probe, data, access={})
    host.clock(0)
    # The delete was never answered: the actor is still whole (its data, its alarm)...
    status, body = host.json("probe", "gone", "POST", "/query", {"sql": "SELECT x FROM t"})
    assert body == {"rows": [[42]]}, body
    assert host.json("probe", "gone", "GET", "/alarm")[1] == {"at": now + DAY}
    # ...and deleting it again removes everything: the file, the listing, the alarm.
    assert host.json("probe", "gone", "POST", "/delete-self")[1] == {"deleted": True}
    assert sorted(host.ids("probe")) == ["keep"]
    assert not paths.db_path(data, "probe", "gone").exists()
    host.clock(2 * DAY)
    wait_until(lambda: _alarm_fired(host, "keep"), what="keep's alarm fired")
    assert sorted(host.ids("probe")) == ["keep"]  # gone's alarm did not bring it back
    assert not paths.db_path(data, "probe", "gone").exists()
    status, body = host.json("probe", "keep", "POST", "/query", {"sql": "SELECT x FROM t"})
    assert body == {"rows": [[42]]}


def _alarm_fired(host: Any, aid: str) -> bool:
    status, body = host.json("probe", aid, "GET", "/log")
    return any(kind == "alarm" for kind, _ in body["rows"])
