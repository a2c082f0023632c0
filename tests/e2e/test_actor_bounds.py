"""Actors that keep nothing leave no file, and new actors are bounded (host/runtime/admission.py),
through a real `wkhost serve`: the public's requests to any id cannot fill the disk, and
filling the bound locks no existing actor out."""

from __future__ import annotations

from pathlib import Path

from wkhost.storage import paths

from .conftest import MakeServer


def actor_files(data: Path) -> list[Path]:
    return sorted(p for p in (data / "actors").rglob("*") if p.is_file())


def test_requests_that_keep_nothing_leave_no_file(make_server: MakeServer,
                                                  tmp_path: Path) -> None:
    """An actor that keeps nothing keeps its file while it is warm, and loses it when it
    is let go: with 4 instances kept warm, 200 ids leave the files of at most the warm
    ones (a database and its WAL each, with room for one in flight), and none after a
    clean stop. (The probe's on-init writes a row, except for ids "nosql-..." and the
    schema-only "schema-a...": those are the visitors here.)"""
    live = 4
    server = make_server(access={}, extra=["--max-live-instances", str(live)])
    data = tmp_path / "data"
    most = 0
    for i in range(200):
        visitor = f"nosql-visitor-{i}" if i % 2 else f"schema-a-visitor-{i}"
        status, body = server.actor("probe", visitor, "GET", "/now", operator=False)
        assert status == 200, body
        most = max(most, len(actor_files(data)))
    assert most <= 2 * (live + 2), most
    # One that writes a row keeps its file, and so does one that sets an alarm; a table
    # and no row is nothing kept.
    status, body = server.actor("probe", "nosql-writer", "POST", "/sql", {
        "sql": "CREATE TABLE t (x); INSERT INTO t VALUES (1)"}, operator=False)
    assert status == 200 and "error" not in body, body
    status, body = server.actor("probe", "nosql-sleeper", "POST", "/alarm/set",
                                query=f"at={10**13}", operator=False)
    assert status == 200, body
    status, body = server.actor("probe", "nosql-schema-only", "POST", "/sql",
                                {"sql": "CREATE TABLE t (x)"}, operator=False)
    assert status == 200 and "error" not in body, body
    assert server.stop() == 0
    kept = {p for p in actor_files(data) if p.suffix == ".db"}
    assert kept == {paths.db_path(data, "probe", i)
                    for i in ("nosql-writer", "nosql-sleeper")}, kept
    server = make_server(access={}, data=data)
    status, body = server.actor("probe", "nosql-writer", "POST", "/query",
                                {"sql": "SELECT x FROM t"}, operator=False)
    assert body == {"rows": [[1]]}, body
    status, body = server.actor("probe", "nosql-sleeper", "GET", "/alarm", operator=False)
    assert body == {"at": 10**13}, body


def test_past_the_bound_new_actors_are_refused_and_existing_ones_served(
        make_server: MakeServer) -> None:
    server = make_server(access={}, extra=["--max-actors", "3"])
    write = {"sql": "CREATE TABLE IF NOT EXISTS t (x); INSERT INTO t VALUES (1)"}
    for i in range(3):
        status, body = server.actor("probe", f"kept-{i}", "POST", "/sql", write,
                                    operator=False)
        assert status == 200 and "error" not in body, body
    for actor_id in ("intruder", "intruder-2"):
        status, _, text = server.request("GET", f"/probe/{actor_id}/now")
        assert status == 507 and b"--max-actors" in text, (status, text)
    for i in range(3):  # the existing ones: read and written
        status, body = server.actor("probe", f"kept-{i}", "POST", "/sql", write,
                                    operator=False)
        assert status == 200 and "error" not in body, body
    # One deletes itself: room for one new actor again.
    assert server.actor("probe", "kept-0", "POST", "/delete-self", operator=False)[0] == 200
    status, body = server.actor("probe", "newcomer", "POST", "/sql", write, operator=False)
    assert status == 200 and "error" not in body, body
    assert server.request("GET", "/probe/one-too-many/now")[0] == 507
    assert server.stop() == 0
