"""An actor's database made again from a snapshot image and the changesets taken after
it (storage/changes.py takes both), each checked against the state it was recorded on:
what cluster mode restores from the store (replication/restore.py).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import apsw

from .changes import SEQUENCE
from .files import HAS_HOST_SCHEMA, delete_db_files

_MAGIC = b"SQLite format 3\x00"
# Header bytes 18-19 of a file written from an image (kept at 1, the rollback journal:
# storage/changes.py): 2, so that it opens in WAL mode with no write.
_WAL = b"\x02\x02"
_INSERT, _UPDATE = apsw.SQLITE_INSERT, apsw.SQLITE_UPDATE


class RestoreMismatch(Exception):
    """A snapshot and its changesets do not make a database: a changeset does not fit the
    state it is applied to, or the image is not an actor's database."""


_CONFLICTS = {
    apsw.SQLITE_CHANGESET_DATA: "a row it changes holds other values",
    apsw.SQLITE_CHANGESET_NOTFOUND: "a row it changes or deletes is missing",
    apsw.SQLITE_CHANGESET_CONFLICT: "a row it inserts exists already",
    apsw.SQLITE_CHANGESET_CONSTRAINT: "a change breaks a constraint",
    apsw.SQLITE_CHANGESET_FOREIGN_KEY: "a foreign key is broken",
}


def restore(path: Path, image: bytes, changes: Sequence[bytes]) -> None:
    """Make the actor's file at `path` from a snapshot image and the changesets taken
    after it, in order, all applied in one transaction. Raises RestoreMismatch if any
    does not fit the state it is applied to, and leaves no file at `path` if it fails.
    A failure of the disk or of memory is raised as it is (apsw's, or an OSError)."""
    try:
        if image[:16] != _MAGIC or len(image) < 100:
            raise RestoreMismatch("the snapshot is not an SQLite database image")
        for suffix in ("-wal", "-shm", "-journal"):  # a stale one would be read as ours
            with contextlib.suppress(FileNotFoundError):
                os.unlink(str(path) + suffix)
        _write_image(path, image)
        _apply_all(path, changes)
    except BaseException:
        delete_db_files(path)
        raise


def _write_image(path: Path, image: bytes) -> None:
    """The image at `path` whole or not at all, in WAL mode (header bytes 18-19)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.restore{os.getpid()}.{threading.get_ident()}")
    try:
        with open(tmp, "wb") as f:  # not synced: the store holds the durable copy
            f.write(image[:18] + _WAL + image[20:])
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


# Not a mismatch: the disk, or memory, failed (files.is_storage_failure).
_STORAGE_ERRORS = (apsw.FullError, apsw.IOError, apsw.NoMemError)


def _apply_all(path: Path, changes: Sequence[bytes]) -> None:
    """Open the restored file, apply every changeset in one transaction, and close it
    (which checkpoints the WAL: everything ends up in the file)."""
    conn = apsw.Connection(str(path))
    which = "the snapshot"
    try:
        # Nothing here needs to survive a power loss; no -shm file either.
        list(conn.execute("PRAGMA locking_mode=EXCLUSIVE; PRAGMA synchronous=OFF"))
        _check_opened(conn)
        # A changeset holds what triggers did already: firing them again would do it
        # twice. (foreign_keys is off on a new connection: no cascades either.)
        conn.config(apsw.SQLITE_DBCONFIG_ENABLE_TRIGGER, 0)
        with conn:
            for index, cs in enumerate(changes):
                which = f"changeset {index} (of {len(changes)})"
                _apply_one(conn, cs, which)
            which = "the commit"
    except _STORAGE_ERRORS:
        raise
    except apsw.Error as e:
        raise RestoreMismatch(f"{which} does not apply: {type(e).__name__}: {e}") from None
    finally:
        conn.close()


def _check_opened(conn: apsw.Connection) -> None:
    try:
        mode = conn.execute("PRAGMA journal_mode").get
        has_host = conn.execute(HAS_HOST_SCHEMA).fetchall()
    except apsw.Error as e:
        raise RestoreMismatch(f"the snapshot does not open: {type(e).__name__}: {e}") from None
    if mode != "wal":
        raise RestoreMismatch(f"the snapshot opens in journal mode {mode!r}, not wal")
    if not has_host:
        raise RestoreMismatch("the snapshot has no host schema (_wk_host_alarm)")


def _apply_one(conn: apsw.Connection, cs: bytes, which: str) -> None:
    """Apply one changeset: its sqlite_sequence first (`Capture`), then its rows,
    aborting at the first conflict. SQLite skips, without a word, the changes to a table
    that is missing or of another shape: every change must have been applied."""
    sequence: list[tuple[int, tuple[Any, ...], tuple[Any, ...]]] = []
    expected = 0
    for change in apsw.Changeset.iter(cs):  # each valid only until the next
        if change.name == SEQUENCE:
            sequence.append((change.opcode, change.old or (), change.new or ()))
        else:
            expected += 1
    for opcode, old, new in sequence:
        _apply_sequence(conn, opcode, old, new, which)
    conflicts: list[str] = []

    def abort(reason: int, change: apsw.TableChange) -> int:
        what = _CONFLICTS.get(reason, f"conflict {reason}")
        conflicts.append(f"{what} (table {change.name}, op {change.op}, "
                         f"old {change.old}, new {change.new})")
        return apsw.SQLITE_CHANGESET_ABORT

    before = conn.total_changes()
    try:
        apsw.Changeset.apply(cs, conn, filter=_not_sequence, conflict=abort,
                             flags=apsw.SQLITE_CHANGESETAPPLY_NOSAVEPOINT)
    except apsw.Error as e:
        why = conflicts[0] if conflicts else f"{type(e).__name__}: {e}"
        raise RestoreMismatch(f"{which} does not apply: {why}") from None
    applied = conn.total_changes() - before
    if applied != expected:
        raise RestoreMismatch(f"{which} does not apply: {expected - applied} of its "
                              f"{expected} changes were skipped (a table missing, or of "
                              "another shape)")


def _not_sequence(table: str) -> bool:
    return table != SEQUENCE


def _apply_sequence(conn: apsw.Connection, opcode: int, old: tuple[Any, ...],
                    new: tuple[Any, ...], which: str) -> None:
    """One change of sqlite_sequence, checked against the row it was recorded on."""
    name = old[0] if old else new[0]
    seq = f"main.{SEQUENCE}"
    if opcode == _INSERT:
        fits = not conn.execute(f"SELECT 1 FROM {seq} WHERE name = ?", (name,)).fetchall()
        if fits:
            conn.execute(f"INSERT INTO {seq} (name, seq) VALUES (?, ?)", (name, new[1]))
    elif opcode == _UPDATE:
        conn.execute(f"UPDATE {seq} SET seq = ? WHERE name = ? AND seq IS ?",
                     (new[1], name, old[1]))
        fits = conn.changes() == 1
    else:
        conn.execute(f"DELETE FROM {seq} WHERE name = ? AND seq IS ?", (name, old[1]))
        fits = conn.changes() == 1
    if not fits:
        raise RestoreMismatch(f"{which} does not apply: the AUTOINCREMENT counter of "
                              f"{name!r} is not what it was recorded on")
