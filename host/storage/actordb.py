"""One SQLite database per actor (apsw), and the `sqlite` WIT interface.

Configuration, and why:
- WAL with synchronous=NORMAL: a commit survives a crash of the process (the WAL is in the
  OS page cache) but not a power loss. `exec-durable` then fsyncs the WAL, which makes that
  commit and every earlier one durable, the same guarantee synchronous=FULL gives, at one
  fsync (about 110 us here) only where the guest asked for it.
- A new database's file is a copy of a template, written without a sync. Its pages are in
  no WAL frame, so the WAL's fsync alone would not keep them: before a new actor's first
  durable write returns, the file's content and its directory's entries are synced too.
  Those syncs start on a thread of their own as soon as the file is made (`NewFileSync`),
  so that first write usually finds them done.
- What guest SQL may do (the authorizer, the reserved names, the limits on values and
  temporary data) is host/sql_policy.py. The host's own statements name `main.` tables,
  so that nothing of the guest's could stand in for them.
- A guest statement that runs long is cut at its event's deadline, and lends its run
  slot to other events meanwhile (host/sql_watch.py).
- max_page_count caps the file; a write past it fails with SQLITE_FULL.
- locking_mode=EXCLUSIVE: only the host's one connection ever uses an actor's database
  while it serves, so the WAL index lives in the connection's memory instead of a shared
  `-shm` file, and a transaction takes no file locks. Opening a new database no longer
  makes and maps the `-shm` file, and a statement costs about 3 us less. Another process
  that opens the file while the host has it open gets SQLITE_BUSY.
- Schema images: a new actor's database starts as a copy of the template, and its on-init
  then makes its tables, each actor the same (about 0.24 ms for a workflow's six objects).
  When a class's on-init ran a single schema-only script, the host keeps the template with
  that script applied (`SchemaImage`) and makes the class's next new actors from it; their
  on-init's script, when it comes, is not run again. Should an on-init do anything else
  first, the database goes back to the plain template before it runs, so no guest ever
  sees a table it did not make (`ActorDb.speculative`).
"""

from __future__ import annotations

import base64
import contextlib
import errno
import json
import os
import queue
import tempfile
import threading
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apsw
from wasmtime.component import Variant

from ..testing import crashpoints
from . import functions as sql_functions
from . import policy as sql_policy
from .watch import WATCH, Loan, StatementWatch

SqlValue = None | int | float | str | bytes

_HOST_SCHEMA = """
CREATE TABLE IF NOT EXISTS main._wk_host_meta (k TEXT PRIMARY KEY, v) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS main._wk_host_alarm (
    one INTEGER PRIMARY KEY CHECK (one = 1),
    at_ms INTEGER,             -- NULL: no alarm
    gen INTEGER NOT NULL,      -- bumped by every guest set/clear: "did the event touch it?"
    retries INTEGER NOT NULL   -- host retries after failed on-alarm events, for backoff
);
INSERT OR IGNORE INTO main._wk_host_alarm VALUES (1, NULL, 0, 0);
"""


_HAS_HOST_SCHEMA = "SELECT 1 FROM main.sqlite_schema WHERE name = '_wk_host_alarm'"

# A new actor's database starts as a copy of this file: WAL mode and the host schema,
# already committed. Writing 12 KB and renaming it costs about 0.1 ms; making the file
# with SQLite (switching to WAL, then the schema's commit) cost 1.4 ms per new actor.
_template: bytes | None = None
_template_lock = threading.Lock()


def _template_bytes() -> bytes:
    global _template
    with _template_lock:
        if _template is None:
            with tempfile.TemporaryDirectory(prefix="wk-template-") as d:
                path = os.path.join(d, "t.db")
                conn = apsw.Connection(path)
                list(conn.execute("PRAGMA journal_mode=WAL"))
                list(conn.execute(_HOST_SCHEMA))
                conn.close()  # the last connection checkpoints: all of it is in the file
                with open(path, "rb") as f:
                    _template = f.read()
        return _template


def _create_from_template(path: Path, data: bytes | None = None) -> None:
    """Make `path` whole or not at all: a crash leaves either no database or the template
    (or `data`: a schema image), never a part (a leftover `.new` file is never taken for a
    database). Not synced: a power loss may still leave the file empty, or lose its
    entry, until `sync_new_file` has run."""
    make_dirs(path.parent)
    tmp = path.with_name(f"{path.name}.new{os.getpid()}.{threading.get_ident()}")
    try:
        with open(tmp, "wb") as f:
            f.write(_template_bytes() if data is None else data)
        os.replace(tmp, path)
    except OSError as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if e.errno == errno.ENOSPC:
            raise apsw.FullError("database or disk is full") from None
        raise


# Directories this process made, or found, with their entries durable.
_durable_dirs: set[Path] = set()
_dirs_lock = threading.Lock()


def make_dirs(d: Path) -> None:
    """Make `d` and its missing parents, durably: a new directory's entry is fsynced in
    its parent before any file is made in it.

    Under one lock, so that a thread that finds a directory another has just made cannot
    go on to acknowledge a durable write in it before that directory's entry is synced."""
    if d in _durable_dirs and os.path.isdir(d):  # (a test may remove a data dir)
        return
    with _dirs_lock:
        missing: list[Path] = []
        p = d
        while not p.is_dir():
            missing.append(p)
            p = p.parent
        for new in reversed(missing):
            new.mkdir(exist_ok=True)
            fsync_dir(new.parent)
        _durable_dirs.add(d)


def fsync_dir(d: Path) -> None:
    _sync_path(d, os.fsync)


def fdatasync_file(path: Path) -> None:
    _sync_path(path, os.fdatasync)


def _sync_path(path: Path, sync: Callable[[int], None]) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        sync(fd)
    finally:
        os.close(fd)


def sync_new_file(path: Path) -> None:
    """Make a database file just made from the template durable: its content (fdatasync),
    then its directory, which holds its entry and its WAL's.

    Why: the WAL's fsync makes the guest's writes durable, but not the pages they sit on.
    Copied from the template and never written again, those pages (the schema's, page 1)
    exist only in the new file, which a power loss may leave empty. A file deleted
    meanwhile (delete-self) has nothing left to sync."""
    try:
        fdatasync_file(path)
    except FileNotFoundError:
        return
    fsync_dir(path.parent)


class NewFileSync:
    """One new file's `sync_new_file`, done on the syncing thread, off its event's path:
    it is done long before the file's first durable write waits for it (a workflow's
    comes at its end), so that write costs one fsync on the event's path, not three.

    A plain lock marks it done: cheaper than a Future, in a path taken once per new
    actor."""

    __slots__ = ("path", "error", "_done")

    def __init__(self, path: Path) -> None:
        self.path = path
        self.error: OSError | None = None
        self._done = threading.Lock()
        self._done.acquire()

    def run(self) -> None:
        try:
            sync_new_file(self.path)
        except OSError as e:
            self.error = e  # kept in _pending: the file's durable writes all fail
        else:
            with _syncer_lock:
                if _pending.get(str(self.path)) is self:
                    del _pending[str(self.path)]
        finally:
            self._done.release()

    def wait(self) -> None:
        """Return once done; raise its error, if it had one, each time."""
        with self._done:
            pass
        if self.error is not None:
            raise self.error


_new_files: queue.SimpleQueue[NewFileSync] = queue.SimpleQueue()
_syncer: threading.Thread | None = None
_syncer_lock = threading.Lock()
# New files whose syncs are not done, or failed, by path: a database closed before its
# first durable write (evicted, asleep) and opened again takes its file's sync over.
_pending: dict[str, NewFileSync] = {}


def _sync_new_files() -> None:
    while True:
        _new_files.get().run()


def start_new_file_sync(path: Path) -> NewFileSync:
    global _syncer
    job = NewFileSync(path)
    with _syncer_lock:
        _pending[str(path)] = job
        if _syncer is None:
            # A daemon; the host waits for what is queued when it stops (wait_new_files).
            _syncer = threading.Thread(target=_sync_new_files, daemon=True,
                                       name="wk-new-file-sync")
            _syncer.start()
    _new_files.put(job)
    return job


def pending_new_file_sync(path: Path) -> NewFileSync | None:
    with _syncer_lock:
        return _pending.get(str(path))


def wait_new_files() -> None:
    """Wait for every new file's syncs queued so far (a host that stops: the next one
    could not know which of its files were never synced)."""
    with _syncer_lock:
        jobs = list(_pending.values())
    for job in jobs:
        with contextlib.suppress(OSError):
            job.wait()


# What a schema-only script may do, seen by the authorizer while it is prepared: make
# tables, indexes, triggers and views (SQLite writes and reads sqlite_master for them,
# reads the new tables' columns for their indexes and checks, and asks for a REINDEX of
# each new index), in a transaction. Anything else (a row written, a function called, a
# pragma) could make the script's result depend on more than the template, so it is not
# kept as an image.
_SCHEMA_OPS = frozenset({
    apsw.SQLITE_CREATE_TABLE, apsw.SQLITE_CREATE_INDEX, apsw.SQLITE_CREATE_TRIGGER,
    apsw.SQLITE_CREATE_VIEW, apsw.SQLITE_TRANSACTION, apsw.SQLITE_READ, apsw.SQLITE_REINDEX,
})
_SCHEMA_TABLES = frozenset({"sqlite_master", "sqlite_schema"})


@dataclass(frozen=True)
class SchemaImage:
    """The template with one schema-only guest script applied: what a new actor's database
    is once its on-init has run `script`."""

    script: str
    data: bytes


def build_schema_image(script: str) -> SchemaImage:
    """Apply `script` to a copy of the template, on the side (about 2 ms, once a class)."""
    with tempfile.TemporaryDirectory(prefix="wk-schema-") as d:
        path = Path(d) / "t.db"
        _create_from_template(path)
        conn = apsw.Connection(str(path))
        try:
            list(conn.execute(script))
        finally:
            conn.close()  # the last connection checkpoints: all of it is in the file
        return SchemaImage(script, path.read_bytes())


class SqlError(Exception):
    """An expected failure of guest SQL; its text goes back to the guest as the err."""


class ActorDb:
    """An actor's database file. Used by one thread at a time (the actor's event)."""

    watch: StatementWatch = WATCH  # who cuts and lends its long statements

    def __init__(self, path: Path, max_pages: int, image: SchemaImage | None = None,
                 max_value_bytes: int = sql_policy.DEFAULT_MAX_VALUE_BYTES) -> None:
        """Open the actor's database, made from the template (or `image`) if missing."""
        self.path = path
        self._max_pages = max_pages
        self._max_value_bytes = max_value_bytes
        # Made here, now: a new actor's. Only such a database may start as an image.
        self.created = not path.exists()
        if self.created:
            _create_from_template(path, image.data if image else None)
        # The script the image stands for, until the guest's first statement: either that
        # script (not run again) or anything else (the plain template comes back first).
        self.speculative = image.script if image and self.created else None
        self.speculation_failed = False
        # The first guest statement of a database made from the plain template, if it
        # was schema-only: what a class's image is learnt from (schema_script).
        self._watch = self.created and image is None
        self._schema_first: str | None = None
        self._watching = False  # the authorizer looks for what is not schema-only
        self._schema_only = True
        self._guest_statements = 0
        self._host_writes: list[tuple[str, Sequence[Any]]] = []
        self._guest = False
        self._names_host = False  # the running guest script's text holds `_wk_host_`
        self.wrote_rows = False  # a guest statement on this connection changed a row
        self._connect()
        self._new_file_synced: NewFileSync | None = None
        if self.created:
            self._sync_new_file()
        else:  # made by this process, closed before its syncs were seen done
            self._new_file_synced = pending_new_file_sync(path)

    def _sync_new_file(self) -> None:
        """Start the new file's own syncs (`sync_new_file`); the first durable write waits
        for them. Started after the open, which has made the WAL, so that the directory's
        sync covers the WAL's entry too."""
        self._new_file_synced = start_new_file_sync(self.path)

    def _connect(self) -> None:
        path, max_pages = self.path, self._max_pages
        # Looked at before the open, which makes the WAL file (see first_host_write).
        self._new_wal = not os.path.exists(str(path) + "-wal")
        self.conn = apsw.Connection(str(path))
        self.durable_pending = False
        self._wal_fd: int | None = None
        self._dir_unsynced = False  # see first_host_write
        conn = self.conn
        conn.setbusytimeout(5000)
        sql_policy.apply_limits(conn, self._max_value_bytes)
        sql_functions.install(conn, self._max_value_bytes)
        # Closing the last connection would checkpoint and remove the WAL (about 2 ms):
        # the host closes a sleeping actor's database after each wake, so it keeps the
        # WAL for the next open instead; auto-checkpoints still bound its size.
        conn.config(apsw.SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1)
        # apsw runs a ";"-separated script lazily, one statement per row fetched: the
        # scripts here are consumed with list() so that every statement runs.
        # locking_mode first: it must be set before the first read opens the WAL.
        list(conn.execute("PRAGMA locking_mode=EXCLUSIVE; PRAGMA synchronous=NORMAL; "
                          f"PRAGMA max_page_count={int(max_pages)}"))
        conn.authorizer = self._authorize
        if not conn.execute(_HAS_HOST_SCHEMA).fetchall():
            # A file cut short while it was made: give it what the template has. (A
            # read, not the schema script: that would be a write on every open.)
            list(conn.execute("PRAGMA journal_mode=WAL"))
            list(conn.execute(_HOST_SCHEMA))

    # -- the authorizer -------------------------------------------------------------
    def _authorize(self, op: int, p1: str | None, p2: str | None, db: str | None,
                   trigger: str | None) -> int:
        if not self._guest:
            return sql_policy.host_rule(trigger)
        if self._watching and op not in _SCHEMA_OPS and (p1 or "").lower() not in _SCHEMA_TABLES:
            self._schema_only = False
        return sql_policy.guest_rule(op, p1, p2, db, self._names_host)

    # -- statements -------------------------------------------------------------------
    def host_exec(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """The host's own statements: not authorized as guest SQL."""
        return list(self.conn.execute(sql, params))

    def first_host_write(self, sql: str, params: Sequence[Any] = ()) -> None:
        """The host's first write to a database it has just made, whose WAL file does not
        exist yet: without SQLite's sync of the new WAL's header and of its directory.

        With synchronous=NORMAL, the first frame written to a WAL makes SQLite fdatasync
        the header, then the directory (the new file's entry): two syncs, about 0.3 ms on
        the event's run slot, for a commit that is not durable anyway. The header sync
        guards a WAL that restarts over older frames (sqlite.org/src/info/ff5be73dee); a
        new file has none. What the directory sync gave is kept: before the first fsync of
        the WAL that a durable write asks for (`_fsync_wal`) reports anything durable, the
        directory is synced too, by the new file's own syncs (`sync_new_file`) or there."""
        if self.speculative is not None:
            self._host_writes.append((sql, params))  # what a failed speculation replays
        if not self._new_wal or self.conn.in_transaction:
            self.host_exec(sql, params)
            return
        list(self.conn.execute("PRAGMA synchronous=OFF"))
        try:
            self.host_exec(sql, params)
        finally:
            list(self.conn.execute("PRAGMA synchronous=NORMAL"))
        self._new_wal = False
        self._dir_unsynced = self._new_file_synced is None

    def guest_exec(self, sql: str, params: Sequence[SqlValue], durable: bool,
                   deadline: float = float("inf"),
                   io_wait: Callable[[], AbstractContextManager[Any]] = contextlib.nullcontext,
                   loan: Loan | None = None,
                   ) -> tuple[list[str], list[tuple[Any, ...]]]:
        """Run one guest statement (or a ";"-separated script). `io_wait` wraps what
        may run without the event's run slot: the fsync a durable write ends with. A
        statement that runs long is interrupted at `deadline`, and lends what `loan`
        lends (its run slot, its place among the working event threads) while it runs
        (host/sql_watch.py), so that hostile SQL holds no other event up."""
        if crashpoints.ARMED:
            crashpoints.statement(sql, "before")
        self._guest_statements += 1
        if self.speculative is not None:
            if sql == self.speculative and not params:
                # The database already is what this script makes of the template.
                self.speculative = None
                return self._after_statement(sql, durable, io_wait, [], [])
            self._abandon_speculation()
        self._watching = self._watch and self._guest_statements == 1 and not params
        self._schema_only = True
        self._guest = True
        self._names_host = sql_policy.names_host(sql)
        running = self.watch.begin(self.conn, deadline, loan)
        changes_before = self.conn.total_changes()
        try:
            # Never from apsw's statement cache when it names the host's tables: the
            # host's own statement of the same text, prepared without the guest's rules,
            # may be there, and a cached statement is not authorized again.
            columns, rows = _run(self.conn, sql, params, can_cache=not self._names_host)
        except apsw.Error as e:
            raise SqlError(self._explain(e)) from None
        finally:
            self.watch.end(running)  # takes back what a long statement lent
            # Rows written, even if later rolled back: kept as "this actor keeps
            # something" (Host._after_event), which errs on keeping a file.
            self.wrote_rows = self.wrote_rows or self.conn.total_changes() != changes_before
            self._guest = False
            watched, self._watching = self._watching, False
        if watched and self._schema_only and not columns and not rows \
                and not self.conn.in_transaction:
            self._schema_first = sql
        return self._after_statement(sql, durable, io_wait, columns, rows)

    def _after_statement(self, sql: str, durable: bool,
                         io_wait: Callable[[], AbstractContextManager[Any]],
                         columns: list[str], rows: list[tuple[Any, ...]],
                         ) -> tuple[list[str], list[tuple[Any, ...]]]:
        if durable:
            self.durable_pending = True
        if self._sync_due():
            with io_wait():
                self.sync_if_pending()
        if crashpoints.ARMED:
            crashpoints.statement(sql, "after")
        return columns, rows

    def _explain(self, e: apsw.Error) -> str:
        if isinstance(e, apsw.InterruptError):
            return ("interrupted: the statement ran past the event's wall-clock budget "
                    "(--wall-budget-ms)")
        if isinstance(e, apsw.TooBigError):
            return (f"TooBigError: a string, blob or statement over the cap (values up to "
                    f"{self._max_value_bytes} bytes: --db-max-value-mb; statements up to "
                    f"{sql_policy.SQL_MAX_BYTES} bytes)")
        if isinstance(e, apsw.NoMemError):
            return ("NoMemError: SQLite's memory for this process is at its limit "
                    "(--sql-memory-mb); the statement was stopped")
        return _one_line(e)

    # -- schema images ------------------------------------------------------------------
    def schema_script(self) -> str | None:
        """After on-init: its script, if it ran exactly one statement, on a database made
        from the plain template, and that statement was schema-only and left no
        transaction open: what the class's image can be made of."""
        return self._schema_first if self._guest_statements == 1 else None

    def end_speculation(self) -> None:
        """After on-init: a speculation never taken up (an on-init that ran no SQL) goes
        back to the plain template too."""
        if self.speculative is not None:
            self._abandon_speculation()

    def _abandon_speculation(self) -> None:
        """The guest's first statement is not the image's script: make the database the
        plain template again, with the host's own first writes, before it runs. Rare (a
        class whose on-init varies), and the host then stops using the class's image."""
        self.speculative = None
        self.speculation_failed = True
        if self._wal_fd is not None:
            os.close(self._wal_fd)
            self._wal_fd = None
        self.conn.close()
        delete_db_files(self.path)
        _create_from_template(self.path)
        self._connect()
        self._sync_new_file()
        writes, self._host_writes = self._host_writes, []
        for sql, params in writes:
            self.first_host_write(sql, params)

    def _sync_due(self) -> bool:
        return self.durable_pending and not self.conn.in_transaction

    def sync_if_pending(self) -> None:
        """fsync the WAL once no transaction is open and a durable write asked for it."""
        if self._sync_due():
            self.durable_pending = False
            self._fsync_wal()

    def _fsync_wal(self) -> None:
        if self._wal_fd is None:
            self._wal_fd = os.open(str(self.path) + "-wal", os.O_RDONLY)
        os.fsync(self._wal_fd)
        if self._new_file_synced is not None:
            # Kept while it fails: no later write may be reported durable either.
            self._new_file_synced.wait()
            self._new_file_synced = None
        if self._dir_unsynced:  # the new WAL's directory entry (first_host_write)
            fsync_dir(self.path.parent)
            self._dir_unsynced = False

    def end_event(self) -> bool:
        """Roll back what the event left open. True if there was something to roll back."""
        self.durable_pending = False
        if self.conn.in_transaction:
            self.conn.execute("ROLLBACK")
            return True
        return False

    def close(self) -> None:
        if self._wal_fd is not None:
            os.close(self._wal_fd)
            self._wal_fd = None
        self.conn.close()


def _run(conn: apsw.Connection, sql: str, params: Sequence[SqlValue], can_cache: bool
         ) -> tuple[list[str], list[tuple[Any, ...]]]:
    cursor = conn.cursor()
    cursor.execute(sql, params, can_cache=can_cache)
    columns: list[str] = []
    rows: list[tuple[Any, ...]] = []
    # apsw runs ";"-separated statements one after another through one cursor; the
    # description must be read while the statement is current.
    for row in cursor:
        if not columns:
            columns = [d[0] for d in cursor.getdescription()]
        rows.append(row)
    if not columns:
        with contextlib.suppress(apsw.ExecutionCompleteError):
            columns = [d[0] for d in cursor.getdescription()]
    return columns, rows


def _one_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}".rstrip(": ")


def delete_db_files(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(str(path) + suffix)


# -- conversion between WIT values and Python ---------------------------------------------
def params_from_wit(params: list[Variant]) -> list[SqlValue]:
    out: list[SqlValue] = []
    for v in params:
        tag = v.tag
        if tag == "blob":
            out.append(str(v.payload).encode("latin-1"))
        else:
            out.append(v.payload)  # null's payload is None
    return out


def value_to_wit(v: Any) -> Variant:
    if v is None:
        return Variant("null")
    if isinstance(v, int):
        return Variant("integer", v)
    if isinstance(v, float):
        return Variant("real", v)
    if isinstance(v, str):
        return Variant("text", v)
    return Variant("blob", bytes(v).decode("latin-1"))


def rows_record(db: ActorDb, columns: list[str], rows: list[tuple[Any, ...]]) -> Any:
    from ..wire import record

    return record(columns=columns, rows=[[value_to_wit(v) for v in row] for row in rows],
                  changes=db.conn.changes(),
                  **{"last-insert-rowid": db.conn.last_insert_rowid()})


def _blob_json(v: Any) -> Any:
    if isinstance(v, bytes | bytearray | memoryview):
        return {"b64": base64.b64encode(bytes(v)).decode("ascii")}
    raise TypeError(f"cannot pack {type(v).__name__}")


def pack_rows(columns: list[str], rows: list[tuple[Any, ...]]) -> str:
    """The `query-packed` encoding: [columns, row, row, ...]; blobs as {"b64": ...}."""
    return json.dumps([columns, *rows], separators=(",", ":"), default=_blob_json)


# -- the `sqlite` interface ---------------------------------------------------------------
def register(root: Any, guard: Any) -> None:
    with root.add_instance("wk:host/sqlite@0.1.0") as iface:
        iface.add_func("exec", guard(_exec))
        iface.add_func("exec-durable", guard(_exec_durable))
        iface.add_func("query-packed", guard(_query_packed))
        iface.add_func("exec-write", guard(_exec_write))


def _guest_exec(sql: str, params: list[Variant], durable: bool
                ) -> tuple[ActorDb, list[str], list[tuple[Any, ...]]]:
    """Run guest SQL for the running event, within its deadline.

    A statement's work is CPU, like the guest's, and keeps the event's run slot; only the
    fsync of a durable write waits on the disk and gives the slot to another event. (Giving
    it up around every statement cost a cold wake about 60 context switches.)"""
    from ..core import event

    ev = event.current()
    db = ev.slot.require_db()
    columns, rows = db.guest_exec(sql, params_from_wit(params), durable, ev.deadline,
                                  io_wait=ev.gate.waiting, loan=ev.loan())
    return db, columns, rows


def _exec(_store: Any, sql: str, params: list[Variant]) -> Any:
    return _exec_typed(sql, params, durable=False)


def _exec_durable(_store: Any, sql: str, params: list[Variant]) -> Any:
    return _exec_typed(sql, params, durable=True)


def _exec_typed(sql: str, params: list[Variant], durable: bool,
                answer: Callable[[ActorDb, list[str], list[tuple[Any, ...]]], Any] = rows_record,
                ) -> Any:
    """`exec`'s result: `answer(...)`, or the error's text."""
    try:
        db, columns, rows = _guest_exec(sql, params, durable)
    except SqlError as e:
        return str(e)
    except OSError as e:  # the fsync itself failed: the write may not be durable
        return f"durable sync failed: {e}"
    return answer(db, columns, rows)


def _query_packed(_store: Any, sql: str, params: list[Variant]) -> str | Variant:
    try:
        _db, columns, rows = _guest_exec(sql, params, False)
    except SqlError as e:
        return Variant("err", str(e))
    return Variant("ok", pack_rows(columns, rows))


def _exec_write(_store: Any, sql: str, params: list[Variant], durable: bool) -> int | str:
    return _exec_typed(sql, params, durable, _changes)  # type: ignore[no-any-return]


def _changes(db: ActorDb, _columns: list[str], _rows: list[tuple[Any, ...]]) -> int:
    return int(db.conn.changes())
