"""The audit log's file (host/storage/audit_log.py): rows written by its thread, read back
with filters and pages, kept within its caps, a row that cannot be written logged, and
processes that open it together all getting it."""

from __future__ import annotations

import json
import logging
import multiprocessing
import multiprocessing.synchronize
from pathlib import Path

import apsw
import pytest
from wkhost.errors import StorageFailed
from wkhost.storage.audit_log import KEEP_ROWS, AuditLog, Entry, Filter, parse_cursor

DAY = 86_400_000


class Clock:
    def __init__(self, now: int = 0) -> None:  # the rows' times below: none too old
        self.now = now

    def __call__(self) -> int:
        return self.now


def entry(at: int, action: str = "start", cls: str = "orders", actor_id: str = "o1",
          **kw: object) -> Entry:
    fields: dict[str, object] = dict(took_ms=1, process=0, method="POST", path="/wk/v1/x",
                                     status=200, result="ok")
    fields.update(kw)
    return Entry(at=at, action=action, cls=cls, actor_id=actor_id, **fields)  # type: ignore[arg-type]


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def log(tmp_path: Path, clock: Clock):  # type: ignore[no-untyped-def]
    a = AuditLog(tmp_path / "_host" / "audit.db", clock)
    yield a
    a.close()


def put(log: AuditLog, *entries: Entry) -> None:
    for e in entries:
        log.record(lambda e=e: e)  # type: ignore[misc]


def read(log: AuditLog, **kw: object) -> tuple[list[Entry], str | None]:
    return log.read(Filter(**kw)).result(timeout=10)  # type: ignore[arg-type]


def test_a_read_finds_every_row_recorded_before_it_newest_first(log: AuditLog) -> None:
    put(log, entry(10), entry(30, "event"), entry(20, "cancel", state="cancelled"))
    rows, nxt = read(log)
    assert [(r.at, r.action) for r in rows] == [(30, "event"), (20, "cancel"), (10, "start")]
    assert rows[1].state == "cancelled" and nxt is None


def test_the_filters_select_by_time_target_and_action(log: AuditLog) -> None:
    put(log, entry(10, cls="orders", actor_id="o1"), entry(20, cls="orders", actor_id="o2"),
        entry(30, "event", cls="orders", actor_id="o1"), entry(40, cls="ledger", actor_id="m"))
    ats = lambda **kw: [r.at for r in read(log, **kw)[0]]  # noqa: E731
    assert ats(since=20) == [40, 30, 20]
    assert ats(until=20) == [20, 10]
    assert ats(since=15, until=35) == [30, 20]
    assert ats(cls="orders") == [30, 20, 10]
    assert ats(cls="orders", actor_id="o1") == [30, 10]
    assert ats(action="start") == [40, 20, 10]
    assert ats(cls="orders", action="event") == [30]


def test_pages_follow_each_other_by_cursor_without_gaps_or_repeats(log: AuditLog) -> None:
    put(log, *[entry(at) for at in (5, 5, 5, 6, 7, 7, 8)])  # equal times: ordered by row
    seen, cursor, pages = [], None, 0
    while True:
        rows, nxt = read(log, limit=3, before=parse_cursor(cursor) if cursor else None)
        seen += [r.at for r in rows]
        pages += 1
        if nxt is None:
            break
        cursor = nxt
    assert seen == [8, 7, 7, 6, 5, 5, 5] and pages == 3


def test_the_row_cap_keeps_the_newest(tmp_path: Path, clock: Clock) -> None:
    log = AuditLog(tmp_path / "audit.db", clock, keep_rows=5)
    put(log, *[entry(at) for at in range(1, 1_201)])  # pruned after the 1,000th row
    log.close()
    log = AuditLog(tmp_path / "audit.db", clock, keep_rows=5)  # and at open
    try:
        assert [r.at for r in read(log, limit=1000)[0]] == [1200, 1199, 1198, 1197, 1196]
    finally:
        log.close()
    assert KEEP_ROWS == 100_000  # what docs/operating.md says


def test_the_days_cap_drops_rows_older_than_it_at_open(tmp_path: Path, clock: Clock) -> None:
    clock.now = 10 * DAY
    log = AuditLog(tmp_path / "audit.db", clock, keep_days=3)
    put(log, entry(clock.now - 4 * DAY), entry(clock.now - 2 * DAY), entry(clock.now))
    log.close()
    log = AuditLog(tmp_path / "audit.db", clock, keep_days=3)
    try:
        assert [r.at for r in read(log)[0]] == [clock.now, clock.now - 2 * DAY]
    finally:
        log.close()


def test_rows_queued_before_close_are_written(tmp_path: Path, clock: Clock) -> None:
    log = AuditLog(tmp_path / "audit.db", clock)
    put(log, *[entry(at) for at in range(50)])
    log.close()
    log = AuditLog(tmp_path / "audit.db", clock)
    try:
        assert len(read(log, limit=1000)[0]) == 50
    finally:
        log.close()


def test_a_log_that_cannot_open_logs_each_action_and_refuses_reads(
        tmp_path: Path, clock: Clock, caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / "audit.db").mkdir()  # a directory where the file should be
    log = AuditLog(tmp_path / "audit.db", clock)
    try:
        with caplog.at_level(logging.WARNING, "wkhost.audit"):
            put(log, entry(7, note="bulk"))
            with pytest.raises(StorageFailed, match="audit log could not be opened"):
                read(log)
        lost = [r.getMessage() for r in caplog.records if "not recorded" in r.getMessage()]
        assert len(lost) == 1
        assert json.loads(lost[0].split(": ", 2)[2])["note"] == "bulk"
    finally:
        log.close()


def test_a_row_that_cannot_be_described_is_logged_and_the_others_kept(
        log: AuditLog, caplog: pytest.LogCaptureFixture) -> None:
    def broken() -> Entry:
        raise KeyError("no")

    with caplog.at_level(logging.ERROR, "wkhost.audit"):
        log.record(broken)
        put(log, entry(1))
        assert [r.at for r in read(log)[0]] == [1]
    assert any("could not be described" in r.getMessage() for r in caplog.records)


def test_two_logs_on_one_file_see_each_others_rows(tmp_path: Path, clock: Clock) -> None:
    """As two processes of `--processes 2` do: one file, each writing its own rows."""
    a = AuditLog(tmp_path / "audit.db", clock)
    b = AuditLog(tmp_path / "audit.db", clock)
    try:
        put(a, entry(1, process=0))
        put(b, entry(2, process=1))
        b.flushed().result(timeout=10)
        assert [(r.at, r.process) for r in read(a)[0]] == [(2, 1), (1, 0)]
    finally:
        a.close()
        b.close()


def test_a_log_made_before_tokens_had_names_gets_their_column(tmp_path: Path,
                                                              clock: Clock) -> None:
    path = tmp_path / "audit.db"
    old = apsw.Connection(str(path))  # the schema as it was, with one row
    old.execute("""CREATE TABLE audit (
        id INTEGER PRIMARY KEY AUTOINCREMENT, at INTEGER NOT NULL, took_ms INTEGER NOT NULL,
        process INTEGER NOT NULL, action TEXT NOT NULL, method TEXT NOT NULL,
        cls TEXT NOT NULL, actor_id TEXT NOT NULL, path TEXT NOT NULL, status INTEGER NOT NULL,
        result TEXT NOT NULL, state TEXT, note TEXT, detail TEXT)""")
    old.execute("INSERT INTO audit (at, took_ms, process, action, method, cls, actor_id, "
                "path, status, result) VALUES (1, 1, 0, 'start', 'POST', 'orders', 'o1', "
                "'/x', 200, 'ok')")
    old.close()
    a, b = AuditLog(path, clock), AuditLog(path, clock)  # two processes: one adds it
    try:
        put(a, entry(2, who="ann"))
        a.flushed().result(timeout=10)
        assert [(r.at, r.who) for r in read(b)[0]] == [(2, "ann"), (1, None)]
    finally:
        a.close()
        b.close()


def test_an_entry_as_the_route_answers_it() -> None:
    doc = entry(5, detail='{"name": "approved"}', state="waiting").doc()
    assert doc["target"] == "orders/o1" and doc["detail"] == {"name": "approved"}
    assert entry(5, cls="", actor_id="").doc()["target"] == ""
    assert entry(5, cls="orders", actor_id="").doc()["target"] == "orders"


def _open_together(root: str, barrier: multiprocessing.synchronize.Barrier,
                   errors: multiprocessing.Queue[str], files: int) -> None:
    """Open an AuditLog on each of `files` new files as the other process opens it too,
    and write one row: what `wkhost serve --processes N` does as its processes start."""
    seen: list[str] = []

    class Errors(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record.getMessage())

    logging.getLogger("wkhost").addHandler(Errors(logging.ERROR))
    for k in range(files):
        barrier.wait()
        a = AuditLog(Path(root) / f"audit-{k}.db", Clock())
        a.record(lambda: entry(1))
        a.flushed().result(10)
        a.close()
    for message in seen:
        errors.put(message)
    errors.put("")


def test_processes_opening_the_log_together_all_get_it(tmp_path: Path) -> None:
    """SQLite may answer "database is locked" to the first statements of a connection
    whatever its busy timeout while another process sets the new file's WAL up (about 1
    open in 300, two at once): the open is tried again, never given up on that."""
    ctx = multiprocessing.get_context("fork")  # spawn would leave its resource tracker
    barrier, errors = ctx.Barrier(2), ctx.Queue()
    procs = [ctx.Process(target=_open_together, args=(str(tmp_path), barrier, errors, 400))
             for _ in range(2)]
    for p in procs:
        p.start()
    got: list[str] = []
    done = 0
    while done < 2:
        message = errors.get(timeout=60)
        done += message == ""
        got += [message] if message else []
    for p in procs:
        p.join(30)
    assert got == [], got[:3]
