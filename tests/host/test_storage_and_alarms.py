"""SQLite through the guest, and the alarm: delivery, moved clock, retries, restarts."""

from __future__ import annotations

import base64
from typing import Any
from unittest import mock

import pytest
from wkhost.storage.actordb import ActorDb

from .support import MakeProbe, Probe, wait_until

DAY = 86_400_000


def alarm_kinds(p: Probe, actor_id: str) -> list[str]:
    return [r[0] for r in p.json(actor_id, "GET", "/log")["rows"] if r[0] == "alarm"]


def test_exec_and_exec_durable_differ_only_in_the_fsync(probe: Probe) -> None:
    probe.sql("s", "CREATE TABLE t (x)")
    with mock.patch.object(ActorDb, "_fsync_wal") as fsync:
        probe.sql("s", "INSERT INTO t VALUES (1)")
        assert fsync.call_count == 0
        probe.sql("s", "INSERT INTO t VALUES (2)", durable=True)
        assert fsync.call_count == 1
    assert probe.sql("s", "SELECT x FROM t ORDER BY x")["rows"] == [[1], [2]]


def test_write_returns_the_changes_and_syncs_only_when_durable(probe: Probe) -> None:
    probe.sql("w", "CREATE TABLE t (x)")

    def write(sql: str, params: list[Any], durable: bool = False) -> Any:
        return probe.json("w", "POST", "/write",
                          {"sql": sql, "params": params, "durable": durable})

    blob = {"b64": base64.b64encode(b"\x00\xff").decode()}
    with mock.patch.object(ActorDb, "_fsync_wal") as fsync:
        assert write("INSERT INTO t VALUES (?), (?), (?)", [1, "two", blob]) == {"changes": 3}
        assert fsync.call_count == 0
        assert write("UPDATE t SET x = ? WHERE x = ?", [4, 1], durable=True) == {"changes": 1}
        assert fsync.call_count == 1
    assert write("DELETE FROM t WHERE x = 'none'", []) == {"changes": 0}
    assert probe.sql("w", "SELECT x FROM t ORDER BY rowid")["rows"] == [[4], ["two"], [blob]]
    # Errors come back as the guest's SqliteError, as exec's do.
    assert "no such table" in write("INSERT INTO nowhere VALUES (1)", [])["error"]
    assert "not authorized" in write("DELETE FROM _wk_host_alarm", [])["error"]


def test_values_of_every_type_round_trip(probe: Probe) -> None:
    blob = {"b64": base64.b64encode(bytes(range(256))).decode()}
    probe.sql("v", "CREATE TABLE t (a, b, c, d, e)")
    probe.sql("v", "INSERT INTO t VALUES (?, ?, ?, ?, ?)", [None, -(2**63), 0.5, "é\u2603", blob])
    assert probe.sql("v", "SELECT * FROM t")["rows"] == [[None, -(2**63), 0.5, "é\u2603", blob]]


def test_a_packed_query_of_5000_rows(probe: Probe) -> None:
    probe.sql("q", "CREATE TABLE t (i INTEGER, s TEXT)")
    probe.sql("q", "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5000)"
                   " INSERT INTO t SELECT i, 'row-' || i FROM n")
    rows = probe.json("q", "POST", "/query", {"sql": "SELECT i, s FROM t ORDER BY i",
                                               "params": []})["rows"]
    assert len(rows) == 5000
    assert rows[0] == [1, "row-1"] and rows[-1] == [5000, "row-5000"]


def test_guest_sql_is_denied_what_the_authorizer_forbids(probe: Probe) -> None:
    for sql in ["ATTACH DATABASE '/tmp/x.db' AS x", "PRAGMA journal_mode=OFF",
                "PRAGMA synchronous=OFF", "PRAGMA writable_schema=ON",
                "SELECT load_extension('x')", "SELECT * FROM _wk_host_alarm"]:
        error = probe.sql("h", sql)["error"]
        assert any(w in error for w in ("not authorized", "prohibited", "too many attached")), \
            (sql, error)


def test_a_far_alarm_fires_when_the_host_clock_moves_days_ahead(probe: Probe) -> None:
    at = probe.clock.now_ms() + 3 * DAY
    probe.json("f", "POST", "/alarm/set", query=f"at={at}")
    probe.clock.jump(3 * DAY - 1)
    assert not wait_until(lambda: alarm_kinds(probe, "f") != [], timeout=0.3)
    probe.clock.jump(1)
    assert wait_until(lambda: alarm_kinds(probe, "f") == ["alarm"])
    # Delivered once, then cleared by the host since on-alarm did not set it again.
    assert wait_until(lambda: probe.json("f", "GET", "/alarm")["at"] is None)


def test_an_alarm_in_the_past_fires_at_once(probe: Probe) -> None:
    probe.json("p", "POST", "/alarm/set", query=f"at={probe.clock.now_ms() - 5000}")
    assert wait_until(lambda: alarm_kinds(probe, "p") == ["alarm"])


def test_a_trapped_on_alarm_is_retried_with_backoff(probe: Probe) -> None:
    now = probe.clock.now_ms()
    probe.json("alarm-trap-1", "POST", "/alarm/set", query=f"at={now}")
    # It trapped (after committing its log row): the host retries one second out, then
    # two, doubling, since the guest did not touch its alarm.
    assert wait_until(lambda: probe.json("alarm-trap-1", "GET", "/alarm")["at"] == now + 1000)
    assert alarm_kinds(probe, "alarm-trap-1") == ["alarm"]
    probe.clock.jump(1000)
    assert wait_until(lambda: probe.json("alarm-trap-1", "GET", "/alarm")["at"] == now + 3000)
    assert alarm_kinds(probe, "alarm-trap-1") == ["alarm", "alarm"]


def test_the_guest_that_re_sets_its_alarm_wins_over_the_host(probe: Probe) -> None:
    now = probe.clock.now_ms()
    probe.sql("r", "INSERT INTO rearm VALUES (?)", [now + DAY])
    probe.json("r", "POST", "/alarm/set", query=f"at={now}")
    assert wait_until(lambda: alarm_kinds(probe, "r") == ["alarm"])
    assert wait_until(lambda: probe.json("r", "GET", "/alarm")["at"] == now + DAY)


def test_an_alarm_survives_a_clean_restart_and_fires(make_probe: MakeProbe, tmp_path) -> None:  # type: ignore[no-untyped-def]
    data = tmp_path / "restart"
    first = make_probe(data_dir=data)
    at = first.clock.now_ms() + DAY
    first.json("k", "POST", "/alarm/set", query=f"at={at}")
    first.host.close()
    assert not (data / "_host" / "running").exists()
    second = make_probe(data_dir=data)
    assert not second.host.index.was_unclean
    assert second.host.scheduler.pending() == 1
    second.clock.jump(DAY)
    assert wait_until(lambda: alarm_kinds(second, "k") == ["alarm"])


def test_an_unclean_stop_rebuilds_the_index_from_the_databases(make_probe: MakeProbe,
                                                                tmp_path) -> None:  # type: ignore[no-untyped-def]
    data = tmp_path / "unclean"
    first = make_probe(data_dir=data)
    first.json("u", "POST", "/alarm/set", query=f"at={first.clock.now_ms() + DAY}")
    first.host.index._exec("DELETE FROM alarms")  # the index lost it, the db has it
    first.host.close()
    (data / "_host" / "running").write_text("as if the host had been killed\n")
    second = make_probe(data_dir=data)
    assert second.host.index.was_unclean
    assert second.host.scheduler.pending() == 1
    assert second.host.list_actors("probe") == ["u"]


def test_an_alarm_of_a_deleted_actor_does_not_bring_it_back(probe: Probe) -> None:
    at = probe.clock.now_ms() + 1000
    probe.json("gone", "POST", "/alarm/set", query=f"at={at}")
    ref = probe.host.actor_ref("probe", "gone")
    # The actor vanishes behind the host's back (its files), its alarm still indexed.
    slot = probe.host._table.by_ref[ref]
    with slot.lock:
        slot.close()
        from wkhost.storage.files import delete_db_files
        delete_db_files(slot.path)
    probe.clock.jump(1000)
    assert wait_until(lambda: probe.host.index.alarms() == [])
    assert not slot.path.exists()
    assert probe.host.list_actors("probe") == []


def test_an_alarm_event_that_leaves_the_actor_asleep_drops_its_instance(
        make_probe: MakeProbe) -> None:
    # Two live actors: more than half the cap. followed_s=0: the requests that set them up
    # do not count as someone following them (the next test is about that).
    probe = make_probe(max_live_instances=2, followed_s=0)
    now = probe.clock.now_ms()
    for actor_id, next_at in (("sleepy", now + DAY), ("busy", now + 1000)):
        probe.sql(actor_id, "INSERT INTO rearm VALUES (?)", [next_at])
        probe.json(actor_id, "POST", "/alarm/set", query=f"at={now}")
    host = probe.host
    # Watch the index only: a request to the actors would make them a new instance.
    assert wait_until(lambda: sorted(at for _, at in host.index.alarms()) == [now + 1000,
                                                                              now + DAY])
    slots = {r.id: s for r, s in host._table.by_ref.items()}
    assert wait_until(lambda: not slots["sleepy"].lock.locked())
    assert slots["sleepy"].instance is None       # re-armed a day ahead: asleep
    assert slots["sleepy"].db is None
    assert slots["busy"].instance is not None     # back in a second: kept warm


def test_an_actor_asked_something_just_before_it_fell_asleep_stays_warm_a_little(
        make_probe: MakeProbe) -> None:
    probe = make_probe(max_live_instances=2, followed_s=1.5)
    now = probe.clock.now_ms()
    for actor_id in ("followed", "other"):
        probe.sql(actor_id, "INSERT INTO rearm VALUES (?)", [now + DAY])
        probe.json(actor_id, "POST", "/alarm/set", query=f"at={now}")
    host = probe.host
    assert wait_until(lambda: sorted(at for _, at in host.index.alarms()) == [now + DAY] * 2)
    slot = host._table.by_ref[host.actor_ref("probe", "followed")]
    assert wait_until(lambda: not slot.lock.locked())
    assert slot.instance is not None and slot.sleepy  # its client may ask again soon
    # The idle sweep (each second) drops it once followed_s has passed, not after 30 s.
    assert wait_until(lambda: host._table.by_ref.get(slot.ref) is None, timeout=6)


def test_with_room_to_spare_a_sleeping_actor_stays_warm(probe: Probe) -> None:
    now = probe.clock.now_ms()
    probe.sql("parked", "INSERT INTO rearm VALUES (?)", [now + DAY])
    probe.json("parked", "POST", "/alarm/set", query=f"at={now}")
    host = probe.host
    assert wait_until(lambda: [at for _, at in host.index.alarms()] == [now + DAY])
    slot = host._table.by_ref[host.actor_ref("probe", "parked")]
    assert wait_until(lambda: not slot.lock.locked())
    assert slot.instance is not None


def test_a_damaged_database_fails_its_actor_clearly_and_no_one_else(probe: Probe) -> None:
    # The database is opened before the event takes its run slot: a failure there must
    # still let go of the actor and its event, request after request.
    from wkhost.errors import StorageFailed
    from wkhost.events import event
    from wkhost.storage.paths import db_path

    path = db_path(probe.host.config.data_dir, "probe", "damaged")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"this is not a database" * 300)
    for _ in range(3):
        with pytest.raises(StorageFailed, match="damaged's database cannot be"):
            probe.send("damaged", "GET", "/now")
        assert event.stack() == []  # the request ran on this thread, and left nothing
    assert probe.send("neighbour", "GET", "/now").status == 200
    assert path.read_bytes() == b"this is not a database" * 300  # nothing overwritten
