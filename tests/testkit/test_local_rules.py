"""The kit on plain CPython keeps the host's rules: traps and why they happened, a new
actor whose on_init fails, an alarm whose event fails, delete_self, access, the host's
SQL rules, and apps whose modules have the same names side by side."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from wkhost.testkit import Kit
from wkhost.testkit.apps import AppError

REPO = Path(__file__).resolve().parents[2]
GUESTS = REPO / "tests" / "guests"
WORKFLOWS = REPO / "examples" / "workflows"


@pytest.fixture
def kit(tmp_path: Path) -> Kit:
    return Kit(sandbox=False, root=tmp_path / "kit")


def body(kit: Kit, cls: str, id: str, method: str, path: str, payload: Any = None) -> Any:
    r = kit.call(cls, id, method, path, b"" if payload is None else json.dumps(payload))
    assert r.status == 200, (r.status, r.body)
    return json.loads(r.body)


def test_an_uncaught_exception_traps_and_the_next_event_reads_why(kit: Kit) -> None:
    kit.serve("t", GUESTS / "trap_info.py")
    r = kit.call("t", "a", "POST", "/raise")
    assert r.status == 500
    info = body(kit, "t", "a", "GET", "/info")
    assert info["text"] == "the guest raised trap_info.TrapInfoError: trap_info: raised " \
                           "on purpose"  # the module's name, as in a component
    assert info["info"]["kind"] == "guest"
    assert 'raise TrapInfoError("trap_info: raised on purpose")' in \
        info["info"]["exception"]["traceback"]
    assert body(kit, "t", "a", "GET", "/info")["text"] is None  # read by a clean event


def test_a_new_actor_whose_on_init_fails_is_not_created(kit: Kit) -> None:
    kit.serve("probe", GUESTS / "probe.py")
    r = kit.call("probe", "init-err-1", "GET", "/log")
    assert (r.status, r.body) == (500, b"the actor was not created: init refused by probe")
    assert ("probe", "init-err-1") not in kit.backend.guests  # type: ignore[attr-defined]
    assert [k for k, _ in body(kit, "probe", "ok", "GET", "/log")["rows"]] == ["init"]


def test_an_alarm_whose_event_fails_runs_again_after_a_growing_delay(kit: Kit) -> None:
    kit.serve("probe", GUESTS / "probe.py")
    at = kit.now() + 10
    assert body(kit, "probe", "alarm-err-1", "POST", f"/alarm/set?at={at}") == {"at": at}
    kit.advance(8_000)  # due at +10 ms, then 1 s, 2 s and 4 s after each failure
    rows = body(kit, "probe", "alarm-err-1", "GET", "/log")["rows"]
    assert [t - at for k, t in rows if k == "alarm"] == [0, 1_000, 3_000, 7_000]
    assert body(kit, "probe", "alarm-err-1", "GET", "/alarm")["at"] == at + 15_000


def test_delete_self_takes_effect_when_the_event_ends(kit: Kit) -> None:
    kit.serve("probe", GUESTS / "probe.py")
    body(kit, "probe", "d", "POST", "/sql", {"sql": "CREATE TABLE kept (x)", "params": []})
    assert body(kit, "probe", "d", "POST", "/delete-self") == {"deleted": True}
    got = body(kit, "probe", "d", "POST", "/sql", {"sql": "SELECT * FROM kept",
                                                   "params": []})
    assert got["error"] == "SQLError: no such table: kept"  # a new actor, made anew


def test_hostile_sql_meets_the_hosts_own_rules(kit: Kit) -> None:
    kit.serve("probe", GUESTS / "probe.py")
    for sql, said in [("ATTACH DATABASE '/tmp/x.db' AS x", "not authorized"),
                      ("SELECT * FROM _wk_host_meta", "access to _wk_host_meta.k is "
                                                      "prohibited"),
                      ("PRAGMA journal_mode = DELETE", "not authorized")]:
        got = body(kit, "probe", "h", "POST", "/sql", {"sql": sql, "params": []})
        assert said in got["error"], (sql, got)


def test_the_public_cannot_call_an_internal_class(kit: Kit) -> None:
    kit.serve("counter", REPO / "examples" / "counter" / "app.py", internal=True)
    r = kit.call("counter", "c", "POST", "/incr", sender="public")
    assert (r.status, r.body) == (403, b"class 'counter' is internal: only actors and "
                                       b"operators call it")
    assert body(kit, "counter", "c", "POST", "/incr") == {"count": 1}  # an operator may


def test_two_apps_whose_modules_have_the_same_names_keep_their_own(kit: Kit) -> None:
    orders = kit.serve_workflow("orders", WORKFLOWS / "orders" / "app.py")
    trips = kit.serve_workflow("trips", WORKFLOWS / "trip" / "app.py")  # both: app, flow
    kit.serve("ledger", WORKFLOWS / "ledger" / "app.py")
    trip = trips.instance("t")
    trip.start({"trip": "t"})
    assert trip.wait_for_status().output["paid"] == "paid t"
    order = orders.instance("o")
    order.force_event_timeout("approved")
    order.start({"item": "x", "qty": 1, "amount": 1})
    assert order.wait_for_status().error == "not approved in time: the reservation was " \
                                            "released"


def test_the_test_routes_sql_only_reads(kit: Kit) -> None:
    trips = kit.serve_workflow("trips", WORKFLOWS / "trip" / "app.py")
    trip = trips.instance("t")
    trip.start({"trip": "t"})
    with pytest.raises(Exception, match="test: the sql failed: .*read-only"):
        trip.sql("DELETE FROM _wk_wf")
    assert trip.sql("SELECT state FROM _wk_wf") == [("completed",)]


def test_an_app_without_a_handler_is_named(kit: Kit, tmp_path: Path) -> None:
    app = tmp_path / "app.py"
    app.write_text("X = 1\n")
    with pytest.raises(AppError, match="defines no Handler"):
        kit.serve("x", app)
    with pytest.raises(AppError, match="no app at"):
        kit.serve("y", tmp_path / "missing.py")
