"""Who holds a place in `--max-actors` (host/runtime/admission.py, issue 36 item 8), through a
real `wkhost serve`: an actor that has written nothing holds none, however warm it is,
and new actors past the bound are refused atomically, however many arrive at once.

The probe's on-init writes a row, except for ids "nosql-...": those keep nothing until
they write (tests/guests/probe.py)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from wkhost.storage import paths

from .conftest import MakeServer
from .server import Server

pytestmark = pytest.mark.e2e

BOUND_S = 120.0  # stops a hung test; no bound on how fast the host must be
WRITE = {"sql": "CREATE TABLE IF NOT EXISTS t (x); INSERT INTO t VALUES (1)"}


def db_files(data: Path) -> list[Path]:
    return sorted(p for p in (data / "actors").rglob("*.db") if p.is_file())


def _at_once(server: Server, ids: list[str]) -> dict[str, int]:
    """Each id created by a write, all asked at once: each one's status."""
    start = threading.Barrier(len(ids))
    statuses: dict[str, int] = {}

    def create(actor_id: str) -> None:
        start.wait(BOUND_S)
        status, body = server.actor("probe", actor_id, "POST", "/sql", WRITE,
                                    operator=False, timeout=BOUND_S)
        assert status == 507 or "error" not in body, body
        statuses[actor_id] = status

    threads = [threading.Thread(target=create, args=(i,)) for i in ids]
    for t in threads:
        t.start()
    for t in threads:
        t.join(BOUND_S)
    assert len(statuses) == len(ids) and set(statuses.values()) <= {200, 507}, statuses
    return statuses


def served(statuses: dict[str, int]) -> list[str]:
    return [i for i, status in statuses.items() if status == 200]


def test_simultaneous_creations_past_the_bound_leave_at_most_the_bound(
        make_server: MakeServer, tmp_path: Path) -> None:
    """48 new actors that each write, asked at once, with a bound of 10: 10 are served,
    38 refused with 507, and 10 files stay. Then, 5 times over, one place is freed and
    48 more race for it: one gets it. (A check, then a count once the file was made,
    let 11 through.)"""
    data = tmp_path / "data"
    server = make_server(access={}, extra=["--max-actors", "10"])
    kept = served(_at_once(server, [f"racer-{i}" for i in range(48)]))
    assert len(kept) == 10 and len(db_files(data)) == 10, kept
    for round_ in range(5):
        status, body = server.actor("probe", kept.pop(), "POST", "/delete-self",
                                    operator=False)
        assert status == 200, body
        won = served(_at_once(server, [f"round-{round_}-{i}" for i in range(48)]))
        assert len(won) == 1 and len(db_files(data)) == 10, (round_, won)
        kept += won
    assert server.request("GET", "/probe/one-more/now")[0] == 507
    assert server.stop() == 0
    assert len(db_files(data)) == 10


def test_a_warm_actor_that_wrote_nothing_holds_no_place(
        make_server: MakeServer, tmp_path: Path) -> None:
    """A bound of 1: an actor that has only been read (warm, its file there) leaves the
    place to one that writes. (It held it until it was let go, some 35 s: the writer got
    507 meanwhile.) Once that place is taken, the reader is a new actor like any: it
    is refused, having nothing to lose."""
    server = make_server(access={}, extra=["--max-actors", "1"])
    for _ in range(3):
        status, body = server.actor("probe", "nosql-reader", "GET", "/now", operator=False)
        assert status == 200, body
    status, body = server.actor("probe", "writer", "POST", "/sql", WRITE, operator=False)
    assert status == 200 and "error" not in body, (status, body)
    status, _, text = server.request("GET", "/probe/nosql-reader/now")
    assert status == 507 and b"--max-actors" in text, (status, text)
    status, body = server.actor("probe", "writer", "POST", "/sql", WRITE, operator=False)
    assert status == 200 and "error" not in body, (status, body)
    assert server.stop() == 0
    data = tmp_path / "data"
    assert db_files(data) == [paths.db_path(data, "probe", "writer")]


def test_an_actor_takes_its_place_when_it_first_keeps_something(
        make_server: MakeServer, tmp_path: Path) -> None:
    """A bound of 2: a reader that later writes, or sets an alarm, holds a place from
    that event on; the bound then refuses the third."""
    server = make_server(access={}, extra=["--max-actors", "2"])
    assert server.actor("probe", "nosql-a", "GET", "/now", operator=False)[0] == 200
    assert server.actor("probe", "nosql-b", "GET", "/now", operator=False)[0] == 200
    assert server.actor("probe", "nosql-c", "GET", "/now", operator=False)[0] == 200
    status, body = server.actor("probe", "nosql-a", "POST", "/sql", WRITE, operator=False)
    assert status == 200 and "error" not in body, (status, body)
    status, body = server.actor("probe", "nosql-b", "POST", "/alarm/set",
                                query=f"at={10**13}", operator=False)
    assert status == 200 and body == {"at": 10**13}, (status, body)
    status, _, text = server.request("GET", "/probe/nosql-c/now")
    assert status == 507, (status, text)
    status, _, text = server.request("GET", "/probe/newcomer/now")
    assert status == 507, (status, text)
    for kept in ("nosql-a", "nosql-b"):  # both served still
        assert server.actor("probe", kept, "GET", "/now", operator=False)[0] == 200
    # One deletes itself: its place is free again.
    assert server.actor("probe", "nosql-a", "POST", "/delete-self", operator=False)[0] == 200
    status, body = server.actor("probe", "newcomer", "POST", "/sql", WRITE, operator=False)
    assert status == 200 and "error" not in body, (status, body)
    assert server.stop() == 0
    assert len(db_files(tmp_path / "data")) == 2
