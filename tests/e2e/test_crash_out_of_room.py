"""Running out of room during a write: the database size cap (`--db-max-mb`, SQLite's
max_page_count) and, where this machine allows mounting one, a small filesystem.

The result must be a clear error, no corruption (PRAGMA integrity_check), the actor
still serving reads, its neighbours unharmed, and everything working again once there
is room.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from wkhost.storage import paths

from . import reliability_support
from .reliability_support import (
    Fleet,
    Host,
    Launch,
    Neighbour,
    Order,
    shop,
    snapshot,
    wait_until,
)

pytestmark = pytest.mark.e2e

# the fixtures, by name (tests/e2e/conftest.py is shared with other suites)
launch = reliability_support.launch
shop_wasm = reliability_support.shop_wasm

BLOB = 50_000


def sql(host: Host, aid: str, text: str, durable: bool = False) -> dict[str, Any]:
    status, body = host.json("probe", aid, "POST", "/sql", {"sql": text, "durable": durable})
    assert status == 200, (status, body)
    return dict(body)


def fill(host: Host, aid: str, limit: int = 400) -> tuple[int, str]:
    """Insert 50 KB blobs until a write fails: (rows written, the error)."""
    sql(host, aid, "CREATE TABLE IF NOT EXISTS big (x BLOB)")
    for n in range(limit):
        r = sql(host, aid, f"INSERT INTO big VALUES (randomblob({BLOB}))", durable=n % 2 == 0)
        if "error" in r:
            return n, r["error"]
    raise AssertionError(f"{limit} blobs fitted: no cap was reached")


def integrity(host: Host, aid: str) -> str:
    return str(sql(host, aid, "PRAGMA integrity_check")["rows"][0][0])


def file_checks(db: Path) -> tuple[str, str]:
    """(integrity_check, journal_mode) of an actor's file, read from a copy."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "a.db"
        copy.write_bytes(db.read_bytes())
        wal = Path(str(db) + "-wal")
        if wal.exists():
            Path(str(copy) + "-wal").write_bytes(wal.read_bytes())
        conn = sqlite3.connect(copy)
        try:
            return (conn.execute("PRAGMA integrity_check").fetchone()[0],
                    conn.execute("PRAGMA journal_mode").fetchone()[0])
        finally:
            conn.close()


def test_a_database_past_its_size_cap_is_a_clear_error_and_stays_whole(
        launch: Launch, shop_wasm: dict[str, Path], tmp_path: Path) -> None:
    data = tmp_path / "data"
    host = launch({"probe": shop_wasm["probe"]}, data, access={}, extra=["--db-max-mb", "1"])
    with Neighbour(host) as healthy:
        written, error = fill(host, "filler")
        assert "full" in error, error  # "FullError: database or disk is full"
        assert 5 < written <= (1 << 20) // BLOB
        # Nothing half-written: the rows are the ones acknowledged, the file is whole.
        assert sql(host, "filler", "SELECT count(*) FROM big")["rows"] == [[written]]
        assert integrity(host, "filler") == "ok"
        # A transaction that runs out of room is rolled back as a whole.
        r = sql(host, "filler", "BEGIN; INSERT INTO big VALUES (1); "
                f"INSERT INTO big VALUES (randomblob({4 * BLOB})); COMMIT", durable=True)
        assert "full" in r.get("error", ""), r
        assert sql(host, "filler", "SELECT count(*) FROM big")["rows"] == [[written]]
        # The alarm row is rewritten in place: setting it at the cap works or is an
        # error the guest sees, never a failed event.
        status, body = host.json("probe", "filler", "POST", "/alarm/set", query="at=1")
        assert status == 200 and (body == {"at": 1} or "not saved" in body["error"]), body
        # Room again after a delete, within the same cap.
        sql(host, "filler", "DELETE FROM big WHERE rowid % 2 = 0", durable=True)
        assert "error" not in sql(host, "filler", f"INSERT INTO big VALUES (randomblob({BLOB}))")
        assert integrity(host, "filler") == "ok"
    healthy.check()
    assert host.stop() == 0, "\n".join(host.log[-40:])
    assert file_checks(paths.db_path(data, "probe", "filler")) == ("ok", "wal")


def test_a_workflow_past_its_size_cap_refuses_clearly_and_the_others_complete(
        launch: Launch, shop_wasm: dict[str, Path], tmp_path: Path) -> None:
    data = tmp_path / "data"
    host = launch(shop(shop_wasm), data, extra=["--db-max-mb", "1"])
    fleet = Fleet([Order("small")])
    fleet.attach(host)
    fleet.pump(until=fleet.all_in("waiting"))
    # Under max_value_bytes (1 MiB) but, with the tables around it, over the 1 MiB cap.
    big = {"item": "x" * 1_040_000, "qty": 1, "amount": 1}
    code, doc = host.wk("orders", "big", "start", {"input": big})
    assert code == 503 and doc["error"] == "storage" and "full" in doc["message"], (code, doc)
    # An event that does not fit is refused the same way, and the instance goes on.
    code, doc = host.wk("orders", "small", "event", {"name": "note",
                                                     "payload": "y" * 1_040_000})
    assert code == 503 and doc["error"] == "storage" and "full" in doc["message"], (code, doc)
    fleet.pump()
    fleet.verify()
    # The refused start left nothing behind: its actor deleted itself at its alarm.
    fleet.advance(1000)
    wait_until(lambda: "big" not in host.ids("orders"), timeout=10, what="big deleted itself")
    assert host.stop() == 0, "\n".join(host.log[-40:])
    snap = snapshot(data)
    assert all(a.integrity == "ok" for a in snap.values()), snap
    assert [e for a in snap.values() for e in a.events] == []  # the refused event is not kept


def test_an_instance_whose_database_fills_up_says_why(launch: Launch,
                                                     shop_wasm: dict[str, Path],
                                                     tmp_path: Path) -> None:
    """An input that fits the cap leaves no room for the journal: every run fails on
    storage and is retried (never a failed workflow), and the status says why instead
    of "running" with no error forever."""
    host = launch(shop(shop_wasm), tmp_path / "data", extra=["--db-max-mb", "1"])
    code, doc = host.wk("orders", "stuffed", "start",
                        {"input": {"item": "x" * 1_000_000, "qty": 1, "amount": 1}})
    assert code == 200 and doc["created"], (code, doc)
    for _ in range(5):
        host.clock(1000)
        time.sleep(0.3)  # the runs retry on the real scheduler
    code, st = host.wk("orders", "stuffed", "status")
    assert code == 200 and st["state"] == "running", (code, st)
    assert st["error"] and "full" in st["error"], (
        "the instance cannot write its journal and retries every second; its status "
        f"should say why: {st}")


# -- a small filesystem (a 4 MB tmpfs) -----------------------------------------------------

# What the host logs for a failure it did not turn into an answer.
UNEXPECTED = ("unexpected failure", "msg=\"host function", "alarm event failed\" class")


def host_trouble(host: Host) -> str:
    """The host's log lines that explain a failure, tracebacks unfolded: from its first
    error on, else its last lines. (Its stderr is read on a thread: given a moment.)"""
    time.sleep(0.3)
    lines = [line.replace("\\n", "\n").replace('\\"', '"') for line in host.log]
    errors = [i for i, line in enumerate(lines) if "level=error" in line or "Traceback" in line]
    start = errors[0] if errors else max(0, len(lines) - 40)
    return "host log:\n" + "\n".join(lines[start:start + 60])


def _can_mount_tmpfs() -> bool:
    """True when this process may mount a tmpfs (root, with CAP_SYS_ADMIN)."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return False
    with tempfile.TemporaryDirectory() as tmp:
        ok = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", tmp],
                            capture_output=True).returncode == 0
        if ok:
            subprocess.run(["umount", tmp], capture_output=True)
        return ok


@contextlib.contextmanager
def small_fs(where: Path, size: str = "4m") -> Iterator[Path]:
    where.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                   check=True, capture_output=True)
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def _fill_with_ballast(root: Path) -> None:
    """Use up every byte left with files we can delete later."""
    i = 0
    while True:
        try:
            with open(root / f"ballast-{i}", "wb") as f:
                f.write(b"\0" * 65536)
                f.flush()
                os.fsync(f.fileno())
        except OSError:
            return
        i += 1


# Only where a tmpfs can be mounted (root here): a machine that cannot gets no such test
# rather than a skipped one. docs/guarantees.md says where it ran.
if _can_mount_tmpfs():

    def test_a_full_filesystem_is_a_clear_error_and_nothing_is_lost(
            launch: Launch, shop_wasm: dict[str, Path], tmp_path: Path) -> None:
        with small_fs(tmp_path / "small") as root:
            data = root / "data"
            host = launch({"probe": shop_wasm["probe"]}, data, access={})
            sql(host, "healthy", "CREATE TABLE t (x); INSERT INTO t VALUES (1)", durable=True)
            (root / "ballast-first").write_bytes(b"\0" * (1 << 20))  # room for later
            with Neighbour(host) as healthy:
                written, error = fill(host, "filler")
                assert "full" in error, error
                _fill_with_ballast(root)  # the last bytes too
                assert integrity(host, "filler") == "ok"
                assert sql(host, "filler", "SELECT count(*) FROM big")["rows"] == [[written]]
                r = sql(host, "healthy", "INSERT INTO t VALUES (2)", durable=True)
                assert "full" in r.get("error", ""), r
                assert sql(host, "healthy", "SELECT count(*) FROM t")["rows"] == [[1]]
                # A new actor cannot get a database: a clear error, not an internal one.
                status, _, text = host.request("GET", "/probe/newcomer/now")
                assert status in (503, 507) and b"full" in text, (status, text)
            healthy.check()
            assert host.stop() == 0, "\n".join(host.log[-40:])

            for f in root.glob("ballast-*"):  # room again
                f.unlink()
            host = launch({"probe": shop_wasm["probe"]}, data, access={})
            assert host.json("probe", "newcomer", "GET", "/now")[0] == 200
            assert sql(host, "filler", "PRAGMA integrity_check")["rows"] == [["ok"]]
            assert sql(host, "filler", "SELECT count(*) FROM big")["rows"] == [[written]]
            assert sql(host, "healthy", "SELECT x FROM t")["rows"] == [[1]]
            assert host.stop() == 0, "\n".join(host.log[-40:])
            for cls_id in (("probe", "filler"), ("probe", "healthy"), ("probe", "newcomer")):
                assert file_checks(paths.db_path(data, *cls_id))[0] == "ok"

    def test_a_workflow_on_a_full_filesystem_resumes_once_there_is_room(
            launch: Launch, shop_wasm: dict[str, Path], tmp_path: Path) -> None:
        with small_fs(tmp_path / "small", "8m") as root:
            data = root / "data"
            host = launch(shop(shop_wasm), data)
            fleet = Fleet([Order("w1"), Order("w2", {"charge_failures": 1})])
            fleet.attach(host)
            # Approved (the pump approves a waiting order) while there is room.
            fleet.pump(until=lambda: all(o.event_acked for o in fleet.orders.values()))
            _fill_with_ballast(root)
            # The runs that follow cannot write: storage errors, retried, not failures.
            for _ in range(5):
                fleet.advance(2000)
                time.sleep(0.2)
            for o in fleet.orders.values():
                code, st = host.wk("orders", o.oid, "status")
                if code not in (200, 503, 507):  # the host's own log says why
                    pytest.fail(f"{o.oid}'s status: {code} {st}\n{host_trouble(host)}",
                                pytrace=False)
                if code == 200:
                    assert st["state"] not in ("failed", "cancelled"), st
            # Nor anything the host did not expect: a host function failing under the
            # guest (a trap), an event or a route failing on what is not a HostError.
            time.sleep(0.3)  # the log is read on a thread
            assert not [line for line in host.log if any(m in line for m in UNEXPECTED)], \
                host_trouble(host)
            for f in root.glob("ballast-*"):
                f.unlink()
            fleet.pump(timeout=30)  # without a restart: their alarms are still theirs
            # A result that could not be recorded is like a crash after f: f runs again.
            fleet.verify(max_reruns=5)
            assert host.stop() == 0, "\n".join(host.log[-40:])
            assert all(a.integrity == "ok" for a in snapshot(data).values())

    def test_a_full_index_filesystem_loses_no_alarm_and_no_actor(
            launch: Launch, shop_wasm: dict[str, Path], tmp_path: Path) -> None:
        """The host's index (DATA/_host) on its own small filesystem, full; the actors'
        databases have room. The index is only a cache of the databases: an alarm a
        guest saved must still fire at its time, a new actor must still be created and
        listed, without waiting for an unclean restart to rebuild the index."""
        data = tmp_path / "data"
        with small_fs(data / "_host", "512k") as index_dir:
            host = launch({"probe": shop_wasm["probe"]}, data, access={})
            now = host.clock(0)
            assert host.json("probe", "early", "GET", "/now")[0] == 200
            _fill_with_ballast(index_dir)
            status, body = host.json("probe", "sleeper", "POST", "/alarm/set",
                                     query=f"at={now + 1000}")
            assert (status, body) == (200, {"at": now + 1000}), (status, body)
            host.clock(2000)
            wait_until(lambda: any(k == "alarm" for k, _ in host.json(
                "probe", "sleeper", "GET", "/log")[1]["rows"]), timeout=10,
                what="the alarm the guest saved fired")
            assert host.stop() == 0, "\n".join(host.log[-40:])
            for f in index_dir.glob("ballast-*"):
                f.unlink()
            host = launch({"probe": shop_wasm["probe"]}, data, access={})
            assert sorted(host.ids("probe")) == ["early", "sleeper"]
            host.close()
