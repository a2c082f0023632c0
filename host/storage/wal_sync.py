"""The durable point of an actor's database on this machine: the WAL's fsync, and what
a new file needs before its first durable write may be reported durable.

- WAL with synchronous=NORMAL: a commit survives a crash of the process (the WAL is in
  the OS page cache) but not a power loss. `exec-durable` then fsyncs the WAL, which
  makes that commit and every earlier one durable, the same guarantee synchronous=FULL
  gives, at one fsync only where the guest asked for it.
- A new database's file is a copy of a template (storage/files.py), made durable by its
  own syncs before its first durable write returns.
- The host's first write to a new database goes without SQLite's sync of the new WAL's
  header and of its directory (`first_write`); the directory's sync comes back before
  the first fsync of the WAL reports anything durable.

One `WalSync` per connection: made just before the connection opens (whether the WAL
file exists is looked at then), told of the new file's syncs just after.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import apsw

from .. import metrics
from .files import NewFileSync, fsync_dir


class WalSync:
    """The WAL's fsync for one connection to one database file."""

    def __init__(self, path: Path) -> None:
        self._path = path
        # Looked at before the open, which makes the WAL file (see first_write).
        self._new_wal = not os.path.exists(str(path) + "-wal")
        self._fd: int | None = None
        self._dir_unsynced = False
        # The new file's own syncs (files.start_new_file_sync), if it is new and they
        # were not seen done: the first fsync of the WAL waits for them.
        self.new_file: NewFileSync | None = None

    def first_write(self, conn: apsw.Connection, write: Callable[[], object]) -> None:
        """The host's first write to a database it has just made, whose WAL file does not
        exist yet: without SQLite's sync of the new WAL's header and of its directory.

        With synchronous=NORMAL, the first frame written to a WAL makes SQLite fdatasync
        the header, then the directory (the new file's entry): two syncs on the
        event's run slot, for a commit that is not durable anyway. The header sync
        guards a WAL that restarts over older frames (sqlite.org/src/info/ff5be73dee); a
        new file has none. What the directory sync gave is kept: before the first fsync of
        the WAL that a durable write asks for (`fsync`) reports anything durable, the
        directory is synced too, by the new file's own syncs (`sync_new_file`) or there."""
        if not self._new_wal or conn.in_transaction:
            write()
            return
        list(conn.execute("PRAGMA synchronous=OFF"))
        try:
            write()
        finally:
            list(conn.execute("PRAGMA synchronous=NORMAL"))
        self._new_wal = False
        self._dir_unsynced = self.new_file is None

    def fsync(self) -> None:
        """Make every commit so far durable: the WAL's fsync, then (once) the new file's
        own syncs and its directory's."""
        if self._fd is None:
            self._fd = os.open(str(self._path) + "-wal", os.O_RDONLY)
        os.fsync(self._fd)
        metrics.fsynced(metrics.WAL)
        if self.new_file is not None:
            # Kept while it fails: no later write may be reported durable either.
            self.new_file.wait()
            self.new_file = None
        if self._dir_unsynced:  # the new WAL's directory entry (first_write)
            fsync_dir(self._path.parent)
            self._dir_unsynced = False

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
