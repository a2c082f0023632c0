"""The audit log's file: one row per operator action, in DATA/_host/audit.db.

Every process of `wkhost serve --processes N` appends to the same file (SQLite's own
locking orders the writers), so a listing merges them by reading it, whatever N was when
each row was written. Nothing here runs on the event loop: `record` queues a row, and
one thread per process writes whatever has queued since its last write in one
transaction (WAL, synchronous=NORMAL: a commit waits on no fsync, and survives a kill -9;
a power loss may take the last rows). Reads go through the same thread, after the rows
queued before them, so a client reads the actions it was answered.

Retention: the newest `keep_rows` rows (default 100,000), none older than `keep_days`
(default 90) on the host's clock; older ones are deleted at open and after every 1,000
rows written. A row that cannot be written (a full disk, say) goes to the host's log as
a warning line instead, whole.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import apsw

from ..errors import StorageFailed

log = logging.getLogger("wkhost.audit")

KEEP_ROWS = 100_000
KEEP_DAYS = 90
_DAY_MS = 86_400_000
_PRUNE_EVERY = 1_000
_MOST_A_BATCH = 1_000

_OPEN_WAITS_S = (0.05, 0.1, 0.2, 0.4, 0.8)  # between the tries of a busy open

_SCHEMA = """
PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;
CREATE TABLE IF NOT EXISTS audit (
    id INTEGER PRIMARY KEY AUTOINCREMENT, at INTEGER NOT NULL, took_ms INTEGER NOT NULL,
    process INTEGER NOT NULL, action TEXT NOT NULL, method TEXT NOT NULL,
    cls TEXT NOT NULL, actor_id TEXT NOT NULL, path TEXT NOT NULL, status INTEGER NOT NULL,
    result TEXT NOT NULL, state TEXT, note TEXT, detail TEXT, who TEXT);
CREATE INDEX IF NOT EXISTS audit_by_at ON audit (at, id);
CREATE INDEX IF NOT EXISTS audit_by_target ON audit (cls, actor_id, at, id);
"""
_COLUMNS = ("at, took_ms, process, action, method, cls, actor_id, path, status, result, "
            "state, note, detail, who")


@dataclass(frozen=True)
class Entry:
    """One action: when it came (host clock, ms), what answered it (`process`), what it
    was (`action`, `method`, `path`: the route under the target, with its query), its
    target (`cls`, `actor_id`; both "" for the host's own routes), the answer (`status`,
    a one-line `result`, the instance's `state` after when the answer says it), the
    client's `note`, and the request's plain fields (`detail`, a JSON map)."""

    at: int
    took_ms: int
    process: int
    action: str
    method: str
    cls: str
    actor_id: str
    path: str
    status: int
    result: str
    state: str | None = None
    note: str | None = None
    detail: str | None = None
    who: str | None = None  # the token's name; None in a row written before names were

    def doc(self) -> dict[str, Any]:
        """As the audit route answers it (`target` is cls or cls/id)."""
        out = asdict(self)
        out["target"] = f"{self.cls}/{self.actor_id}" if self.actor_id else self.cls
        out["detail"] = json.loads(self.detail) if self.detail else {}
        return out


@dataclass(frozen=True)
class Filter:
    """Which rows a read wants: at within [since, until], of a class (and id), of an
    action, older than the cursor `before` ((at, id) of the last row of a page)."""

    since: int | None = None
    until: int | None = None
    cls: str | None = None
    actor_id: str | None = None
    action: str | None = None
    before: tuple[int, int] | None = None
    limit: int = 100


Page = tuple[list[Entry], "str | None"]  # newest first; the cursor of the next page


class _Job:
    def __init__(self, fn: Callable[[apsw.Connection], Any]) -> None:
        self.fn = fn
        self.done: Future[Any] = Future()


_STOP = object()


class AuditLog:
    """The file at `path`, written by a thread of its own. `now_ms`: the host's clock."""

    def __init__(self, path: Path, now_ms: Callable[[], int], keep_rows: int = KEEP_ROWS,
                 keep_days: int = KEEP_DAYS) -> None:
        self.path = path
        self.now_ms = now_ms
        self.keep_rows = keep_rows
        self.keep_days = keep_days
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._unpruned = 0
        self._thread = threading.Thread(target=self._run, name="wkhost-audit", daemon=True)
        self._thread.start()

    # -- what other threads call (none of it waits on the file) -------------------------
    def record(self, make: Callable[[], Entry]) -> None:
        """Queue the row `make()` builds; `make` runs on the log's thread, so that the
        caller pays only for the queueing."""
        self._queue.put(make)

    def read(self, f: Filter) -> Future[Page]:
        """The rows `f` selects, once every row queued before has been written."""
        job = _Job(lambda db: _select(db, f))
        self._queue.put(job)
        return job.done

    def flushed(self) -> Future[None]:
        """Done once every row queued before it is written (or logged as lost)."""
        job = _Job(lambda db: None)
        self._queue.put(job)
        return job.done

    def close(self) -> None:
        """Write what has queued, then stop the thread (blocks: call it off the loop)."""
        self._queue.put(_STOP)
        self._thread.join()

    # -- the log's thread --------------------------------------------------------------
    def _run(self) -> None:
        db = self._open()
        stopping = False
        while not stopping:
            batch = [self._queue.get()]
            while len(batch) < _MOST_A_BATCH:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            stopping = _STOP in batch
            made = (_built(m) for m in batch if callable(m))  # a job or _STOP is not
            self._write(db, [e for e in made if e is not None])
            for job in (j for j in batch if isinstance(j, _Job)):
                _run_job(db, job)
        if db is not None:
            db.close()

    def _open(self) -> apsw.Connection | None:
        """The log's connection, or None (its actions then go to the host's log).

        Every process of `--processes N` opens the one file as it starts. Two doing it
        at once can get "database is locked" from its first statements whatever the
        busy timeout (SQLite answers BUSY without waiting while the other sets up its
        WAL; about 1 open in 300 when two start together): such an open is tried again,
        a few times, before the log is given up."""
        for wait_s in (*_OPEN_WAITS_S, None):
            db = None
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                db = apsw.Connection(str(self.path))
                db.setbusytimeout(10_000)  # the other processes' writes: this thread waits
                list(db.execute(_SCHEMA))  # list(): apsw runs a script lazily
                _add_who(db)
                self._prune(db)
                return db
            except apsw.BusyError as e:
                if db is not None:
                    db.close()
                if wait_s is None:
                    _unopened(self.path, e)
                    return None
                time.sleep(wait_s)
            except (apsw.Error, OSError) as e:
                if db is not None:
                    db.close()
                _unopened(self.path, e)
                return None
        return None

    def _write(self, db: apsw.Connection | None, entries: list[Entry]) -> None:
        if not entries:
            return
        try:
            if db is None:
                raise apsw.CantOpenError("not open")
            with db:
                db.executemany(f"INSERT INTO audit ({_COLUMNS}) VALUES "
                               "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                               [_row(e) for e in entries])
            self._unpruned += len(entries)
            if self._unpruned >= _PRUNE_EVERY:
                self._prune(db)
        except apsw.Error as e:
            for entry in entries:  # the log's reader still finds them, in the host's log
                log.warning("audit: not recorded (%s): %s", e, json.dumps(entry.doc()))

    def _prune(self, db: apsw.Connection) -> None:
        self._unpruned = 0
        oldest = self.now_ms() - self.keep_days * _DAY_MS
        with db:
            db.execute("DELETE FROM audit WHERE at < ?", (oldest,))
            db.execute("DELETE FROM audit WHERE id <= (SELECT id FROM audit ORDER BY id "
                       "DESC LIMIT 1 OFFSET ?)", (self.keep_rows,))


def _add_who(db: apsw.Connection) -> None:
    """A log made before the tokens had names gets their column (its rows' is NULL)."""
    if any(row[1] == "who" for row in db.execute("PRAGMA table_info(audit)")):
        return
    try:
        db.execute("ALTER TABLE audit ADD COLUMN who TEXT")
    except apsw.SQLError as e:  # another process starting on the file added it first
        if "duplicate column" not in str(e):
            raise


def _built(make: Callable[[], Entry]) -> Entry | None:
    try:
        return make()
    except Exception:  # a bug in describing one answer must not stop the log
        log.exception("audit: an action could not be described")
        return None


def _run_job(db: apsw.Connection | None, job: _Job) -> None:
    if db is None:
        job.done.set_exception(StorageFailed("the audit log could not be opened (see the "
                                             "host's log)"))
        return
    try:
        job.done.set_result(job.fn(db))
    except apsw.Error as e:
        job.done.set_exception(StorageFailed(f"the audit log cannot be read: {e}"))
    except Exception as e:  # whoever waits on it is told, rather than left waiting
        job.done.set_exception(e)


def _row(e: Entry) -> tuple[Any, ...]:
    return (e.at, e.took_ms, e.process, e.action, e.method, e.cls, e.actor_id, e.path,
            e.status, e.result, e.state, e.note, e.detail, e.who)


def _select(db: apsw.Connection, f: Filter) -> Page:
    where, args = ["1"], []
    for clause, value in (("at >= ?", f.since), ("at <= ?", f.until), ("cls = ?", f.cls),
                          ("actor_id = ?", f.actor_id), ("action = ?", f.action)):
        if value is not None:
            where.append(clause)
            args.append(value)
    if f.before is not None:
        where.append("(at, id) < (?, ?)")
        args += list(f.before)
    rows = list(db.execute(f"SELECT id, {_COLUMNS} FROM audit WHERE {' AND '.join(where)} "
                           "ORDER BY at DESC, id DESC LIMIT ?", (*args, f.limit + 1)))
    more = len(rows) > f.limit
    rows = rows[:f.limit]
    cursor = f"{rows[-1][1]}.{rows[-1][0]}" if more else None
    return [Entry(*row[1:]) for row in rows], cursor


def parse_cursor(text: str) -> tuple[int, int]:
    """A page's cursor ("AT.ID", as a page's answer gives it) back; ValueError if not."""
    at, _, row_id = text.partition(".")
    return int(at), int(row_id)


def _unopened(path: Path, e: BaseException) -> None:
    log.error("the audit log %s cannot be opened (%s): actions go to this log instead",
              path, e)
