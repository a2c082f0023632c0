"""A disk that fails under the host's own writes: every such failure is an answer (the
guest's SQL error, or StorageFailed, 507), never an unexpected error (500), and the
actor's neighbours go on.

The failures are injected here (a full disk is real in tests/e2e/test_crash_out_of_room.py):
each wraps one ActorDb method so that it fails the way SQLite or the OS does on a full
disk, for one actor only.
"""

from __future__ import annotations

import errno
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import apsw
import pytest
from wkhost.errors import GuestFailed, StorageFailed
from wkhost.storage import files
from wkhost.storage.actordb import ActorDb
from wkhost.storage.index import Index

from .support import Probe, wait_until

FULL = "database or disk is full"


@pytest.fixture
def fail_on(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., list[str]]]:
    """fail_on(method, actor_id, when=lambda *args: True, error=FullError): make
    ActorDb.`method` raise `error` for that actor while `when(*args)` holds. Returns the
    list of the calls that failed (their first argument, or the method's name)."""

    def arm(method: str, actor_id: str, when: Callable[..., bool] = lambda *a: True,
            error: Callable[[], BaseException] = lambda: apsw.FullError(FULL)) -> list[str]:
        real = getattr(ActorDb, method)
        failed: list[str] = []

        def failing(self: ActorDb, *args: Any, **kw: Any) -> Any:
            if self.path.stem == actor_id and when(*args):
                failed.append(str(args[0]) if args else method)
                raise error()
            return real(self, *args, **kw)

        monkeypatch.setattr(ActorDb, method, failing)
        return failed

    yield arm


def test_a_trap_whose_reason_cannot_be_kept_is_still_the_guests_trap(
        probe: Probe, fail_on: Callable[..., list[str]]) -> None:
    # The event trapped, perhaps because the disk is full; keeping why (a host write
    # after the event) fails too. The caller hears of the trap, not of that write.
    probe.json("trapper", "GET", "/now")
    failed = fail_on("host_exec", "trapper", lambda sql, *_: "'trap'" in sql)
    with pytest.raises(GuestFailed, match="the guest raised RuntimeError: probe: trap requested"):
        probe.send("trapper", "POST", "/trap")
    assert failed, "the trap's row was never written"
    assert probe.send("neighbour", "GET", "/now").status == 200
    assert probe.send("trapper", "GET", "/now").status == 200  # it still serves


def test_a_new_actor_whose_first_write_fails_is_storage_failed_then_created(
        probe: Probe, fail_on: Callable[..., list[str]]) -> None:
    # The new database's meta rows are the host's first write to it: on a full disk,
    # a clear 507 naming it, and the actor is made once there is room.
    failed = fail_on("first_host_write", "newcomer", lambda *_: len(failed) < 1)
    with pytest.raises(StorageFailed, match=f"probe/newcomer's storage failed: {FULL}"):
        probe.send("newcomer", "GET", "/now")
    assert probe.send("neighbour", "GET", "/now").status == 200
    assert probe.send("newcomer", "GET", "/now").status == 200
    assert probe.sql("newcomer", "SELECT kind FROM log")["rows"] == [["init"]]


def test_a_host_write_that_fails_in_an_alarm_event_is_retried(
        probe: Probe, fail_on: Callable[..., list[str]]) -> None:
    # Clearing the alarm's row after a fire fails: the event is a storage failure, and
    # the alarm is retried from memory until the row can be written.
    now = probe.clock.now_ms()
    failed = fail_on("host_exec", "ringer",
                     lambda sql, *_: "SET at_ms = NULL" in sql and len(failed) < 1)
    probe.json("ringer", "POST", "/alarm/set", query=f"at={now}")
    assert wait_until(lambda: bool(failed)), "the alarm never fired"
    # The retry is timed from the failed event's end, after the failed write: jumping
    # the clock before that end (a busy machine) would put the retry past the jump.
    assert probe.host.alarms.scheduler.wait_settled(10)
    probe.clock.jump(2000)  # past the retry (alarm_retry_base_ms)
    assert wait_until(lambda: probe.json("ringer", "GET", "/alarm")["at"] is None)
    kinds = [r[0] for r in probe.json("ringer", "GET", "/log")["rows"]]
    assert kinds.count("alarm") == 2, kinds


def test_an_os_error_of_a_full_disk_is_storage_failed_and_others_are_not(
        probe: Probe, fail_on: Callable[..., list[str]]) -> None:
    probe.json("syncer", "GET", "/now")
    fail_on("end_event", "syncer", error=lambda: OSError(errno.ENOSPC, "No space left"))
    with pytest.raises(StorageFailed, match="No space left"):
        probe.send("syncer", "GET", "/now")
    assert probe.send("neighbour", "GET", "/now").status == 200
    # Not the disk's: a bug stays one, with its traceback in the log.
    fail_on("end_event", "broken", error=lambda: OSError(errno.EBADF, "Bad file"))
    with pytest.raises(OSError, match="Bad file"):
        probe.send("broken", "GET", "/now")


@pytest.mark.parametrize("route", ["/sql", "/query"])
def test_a_storage_failure_around_a_guest_statement_is_the_guests_sql_error(
        probe: Probe, fail_on: Callable[..., list[str]], route: str) -> None:
    # Around the statement itself (a COMMIT with the attributes it carried, the schema
    # image given up and the template made again): the guest's SQL error, which it may
    # handle (a workflow answers 503 "storage"), not a trap. The first cause is named:
    # the COMMIT's FullError, not the failed ROLLBACK after it.
    def commit_then_rollback() -> BaseException:
        try:
            raise apsw.FullError(FULL)
        except apsw.FullError:
            try:
                raise apsw.SQLError("cannot rollback - no transaction is active")
            except apsw.SQLError as e:
                return e

    probe.json("writer", "GET", "/now")
    fail_on("guest_exec", "writer", lambda sql, *_: "x" in sql, error=commit_then_rollback)
    resp = probe.send("writer", "POST", route, json.dumps({"sql": "SELECT 1 AS x"}))
    assert resp.status == 200, resp.body
    assert json.loads(resp.body) == {"error": f"FullError: {FULL}"}
    assert probe.sql("writer", "SELECT 2")["rows"] == [[2]]


def test_an_index_that_cannot_be_read_is_storage_failed(tmp_path: Path) -> None:
    index = Index(tmp_path / "_host")
    index.conn.close()  # as good as a file that fails under the read
    with pytest.raises(StorageFailed, match="the host's index cannot be read"):
        index.actors("probe")


def test_which_failures_are_the_storages() -> None:
    assert files.is_storage_failure(apsw.FullError(FULL))
    assert files.is_storage_failure(apsw.IOError("disk I/O error"))
    for code in (errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EROFS):
        assert files.is_storage_failure(OSError(code, "x"))
    assert not files.is_storage_failure(OSError(errno.EBADF, "x"))
    assert not files.is_storage_failure(ValueError("x"))
