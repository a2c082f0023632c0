"""An actor database's files: the template each starts from, durable directories, and
the syncs that make a new file durable.

- A new database's file is a copy of a template, written without a sync. Its pages are in
  no WAL frame, so the WAL's fsync alone would not keep them: before a new actor's first
  durable write returns, the file's content and its directory's entries are synced too.
  Those syncs start on a thread of their own as soon as the file is made (`NewFileSync`),
  so that first write usually finds them done.
"""

from __future__ import annotations

import contextlib
import errno
import os
import queue
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

import apsw

from .. import metrics

HOST_SCHEMA = """
CREATE TABLE IF NOT EXISTS main._wk_host_meta (k TEXT PRIMARY KEY, v) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS main._wk_host_alarm (
    one INTEGER PRIMARY KEY CHECK (one = 1),
    at_ms INTEGER,             -- NULL: no alarm
    gen INTEGER NOT NULL,      -- bumped by every guest set/clear: "did the event touch it?"
    retries INTEGER NOT NULL   -- host retries after failed on-alarm events, for backoff
);
INSERT OR IGNORE INTO main._wk_host_alarm VALUES (1, NULL, 0, 0);
"""


HAS_HOST_SCHEMA = "SELECT 1 FROM main.sqlite_schema WHERE name = '_wk_host_alarm'"

# A new actor's database starts as a copy of this file: WAL mode and the host schema,
# already committed. Writing it and renaming it costs a fraction of making the file with
# SQLite (switching to WAL, then the schema's commit) for each new actor.
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
                list(conn.execute(HOST_SCHEMA))
                conn.close()  # the last connection checkpoints: all of it is in the file
                with open(path, "rb") as f:
                    _template = f.read()
        return _template


def create_from_template(path: Path, data: bytes | None = None) -> None:
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
        if e.errno in (errno.ENOSPC, errno.EDQUOT):
            raise apsw.FullError("database or disk is full") from None
        raise


# The OSErrors of a disk with no room left, or none that works: the storage failed, the
# host did not.
STORAGE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EROFS})


def is_storage_failure(e: BaseException) -> bool:
    """SQLite's failure, or the disk's (STORAGE_ERRNOS): what an event or a route answers
    as a storage failure (507), never as the host's own (500)."""
    return isinstance(e, apsw.Error) or (isinstance(e, OSError) and e.errno in STORAGE_ERRNOS)


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
    metrics.fsynced(metrics.DIRECTORY)


def fdatasync_file(path: Path) -> None:
    _sync_path(path, os.fdatasync)
    metrics.fsynced(metrics.FILE)


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


def delete_db_files(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(str(path) + suffix)
