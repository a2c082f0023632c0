"""The host's index of actors, their pending alarms and what they published (their
attributes), derived from the actors' own databases.

It lets the host schedule alarms and list a class's actors, by their attributes too
(storage/listing.py), without opening every database. It can always be rebuilt from
them, and is: a marker file says the host is running, so a start that finds it knows the
last stop was unclean and rebuilds.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import apsw

from ..errors import StorageFailed
from ..partition import Partition
from ..types import ActorRef
from . import host_rows, paths
from .attributes import Attributes, decoded
from .files import delete_db_files, fdatasync_file, fsync_dir
from .listing import Listed, ListQuery, count_sql, listed, page_sql

log = logging.getLogger("wkhost.index")

_SCHEMA = """
PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;
CREATE TABLE IF NOT EXISTS actors (cls TEXT, id TEXT, PRIMARY KEY (cls, id)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS alarms (cls TEXT, id TEXT, at_ms INTEGER NOT NULL,
                                   PRIMARY KEY (cls, id)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS attrs (cls TEXT, id TEXT, status TEXT NOT NULL,
                                  updated_ms INTEGER NOT NULL, labels TEXT NOT NULL,
                                  first_ms INTEGER, PRIMARY KEY (cls, id)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS attrs_by_status ON attrs (cls, status, updated_ms, id);
CREATE INDEX IF NOT EXISTS attrs_by_time ON attrs (cls, updated_ms, id);
CREATE TABLE IF NOT EXISTS labels (cls TEXT, k TEXT, v TEXT, id TEXT,
                                   PRIMARY KEY (cls, k, v, id)) WITHOUT ROWID;
"""

_FORGET_ATTRS = ("DELETE FROM attrs WHERE cls = ? AND id = ?; "
                 "DELETE FROM labels WHERE cls = ? AND id = ?")
_INSERT_ATTRS = ("INSERT OR REPLACE INTO attrs (cls, id, status, updated_ms, labels, first_ms)"
                 " VALUES (?, ?, ?, ?, ?, ?)")
_INSERT_LABEL = "INSERT OR IGNORE INTO labels VALUES (?, ?, ?, ?)"


class Index:
    def __init__(self, host_dir: Path) -> None:
        """The index in `host_dir`: DATA/_host, or one process's own directory in it
        (host/partition.py)."""
        self.dir = host_dir
        self.dir.mkdir(parents=True, exist_ok=True)
        self._marker = self.dir / "running"
        self.was_unclean = self._marker.exists()
        # No index yet: a new data directory, or actors made under another number of
        # processes (prepare_layout), which this process must find too.
        self.is_new = not (self.dir / "index.db").exists()
        self.stale = False  # a write failed: the next start must rebuild
        self._lock = threading.Lock()
        self._queue: list[tuple[str, tuple[object, ...]]] = []  # writes not made yet
        self._queue_lock = threading.Lock()
        self.conn = apsw.Connection(str(self.dir / "index.db"))
        self.conn.setbusytimeout(5000)
        list(self.conn.execute(_SCHEMA))  # list(): apsw runs a script lazily
        self._add_first_ms()
        self._marker.write_text("wkhost is running; a start that finds this file rebuilds\n")

    def _add_first_ms(self) -> None:
        """An index made before first_ms was kept gets its column (NULL: not known)."""
        if not any(r[1] == "first_ms" for r in self.conn.execute("PRAGMA table_info(attrs)")):
            self.conn.execute("ALTER TABLE attrs ADD COLUMN first_ms INTEGER")

    def close(self) -> None:
        """A clean stop: the next start trusts the index instead of rebuilding it, unless
        a write to it failed while running."""
        self.flush()
        with self._lock:
            self.conn.close()
        if not self.stale:
            self._marker.unlink(missing_ok=True)

    # -- writes: kept, and made together ---------------------------------------------------
    # An index write must not fail the event. The actors' databases are the truth: a
    # failure only marks the index for a rebuild at the next start, and so does a crash
    # before the write is made (the marker). Made one at a time, an event's index writes
    # would be a visible share of a new workflow's event; together, in one transaction at the
    # janitor's next round (every second), before any read, at a clean stop, or once
    # `_FLUSH_AT` are waiting, a few each.

    def add_actor(self, ref: ActorRef) -> None:
        self._write("INSERT OR IGNORE INTO actors VALUES (?, ?)", (ref.cls, ref.id))

    def remove_actor(self, ref: ActorRef) -> None:
        self._write("DELETE FROM actors WHERE cls = ? AND id = ?; "
                    "DELETE FROM alarms WHERE cls = ? AND id = ?",
                    (ref.cls, ref.id, ref.cls, ref.id))
        self._write(_FORGET_ATTRS, (ref.cls, ref.id, ref.cls, ref.id))

    def set_attrs(self, ref: ActorRef, attrs: Attributes | None) -> None:
        """What the actor has published (storage/attributes.py), as committed."""
        for sql, params in _attrs_writes(ref, attrs):
            self._write(sql, params)

    def set_alarm(self, ref: ActorRef, at_ms: int | None) -> None:
        if at_ms is None:
            self._write("DELETE FROM alarms WHERE cls = ? AND id = ?", (ref.cls, ref.id))
        else:
            self._write("INSERT OR REPLACE INTO alarms VALUES (?, ?, ?)",
                        (ref.cls, ref.id, at_ms))

    def _write(self, sql: str, params: tuple[object, ...]) -> None:
        with self._queue_lock:
            self._queue.append((sql, params))
            full = len(self._queue) >= _FLUSH_AT
        if full:
            self.flush()

    def flush(self) -> None:
        """Make the waiting writes, in the order they came (the lock held from taking them
        to their commit, so that no later batch can commit before an earlier one)."""
        with self._lock:
            with self._queue_lock:
                queue, self._queue = self._queue, []
            if not queue:
                return
            try:
                with self.conn:
                    for sql, params in queue:
                        list(self.conn.execute(sql, params))
            except apsw.Error as e:
                self.stale = True
                log.error("the index could not be updated (%s); it is rebuilt at the next "
                          "start", e)

    # -- reads (and a test's own statements): after the waiting writes ----------------
    def _exec(self, sql: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
        """A read: a listing's, the metrics', the alarms' at a start. One that fails (a
        damaged or unreadable file) is StorageFailed, an answer, not the host's bug."""
        self.flush()
        try:
            with self._lock:
                return list(self.conn.execute(sql, params))
        except apsw.Error as e:
            raise StorageFailed(f"the host's index cannot be read: {e}") from None

    def alarms(self) -> list[tuple[ActorRef, int]]:
        rows = self._exec("SELECT cls, id, at_ms FROM alarms")
        return [(ActorRef(str(c), str(i)), int(str(t))) for c, i, t in rows]

    def count_actors(self) -> int:
        return int(str(self._exec("SELECT count(*) FROM actors")[0][0]))

    def status_counts(self) -> list[tuple[str, str, int]]:
        """(class, status, how many actors published it), for the metrics."""
        rows = self._exec("SELECT cls, status, count(*) FROM attrs GROUP BY cls, status")
        return [(str(c), str(s), int(str(n))) for c, s, n in rows]

    def actors(self, cls: str, after: str = "", limit: int = 1000) -> list[str]:
        rows = self._exec("SELECT id FROM actors WHERE cls = ? AND id > ? ORDER BY id LIMIT ?",
                          (cls, after, limit))
        return [str(r[0]) for r in rows]

    def list_page(self, q: ListQuery, count: bool = False
                  ) -> tuple[list[Listed], int | None]:
        """One page of `q` from this process's actors, and how many match in all."""
        sql, params = page_sql(q)
        rows = [listed(r) for r in self._exec(sql, tuple(params))]
        if not count:
            return rows, None
        sql, params = count_sql(q)
        return rows, int(str(self._exec(sql, tuple(params))[0][0]))

    def rebuild(self, data_dir: Path, owns_shard: Callable[[str], bool] = lambda _: True
                ) -> int:
        """Re-derive both tables from every actor database in a directory this process
        owns (host/partition.py). Returns the actor count.

        Each database found is synced too, with its directory: a host that died may
        have made a new one whose own syncs never ran (storage/files.py: NewFileSync), and this
        host's first durable write to it would sync only its WAL. Files already on disk
        cost a system call each."""
        found: list[tuple[ActorRef, int | None, Attributes | None]] = []
        dirs: set[Path] = set()
        for path in _actor_files(data_dir):
            if not owns_shard(path.parent.name):
                continue
            entry = _read_actor(path)
            if entry is not None:
                found.append(entry)
                fdatasync_file(path)
                dirs.add(path.parent)
        for d in dirs:
            fsync_dir(d)
        with self._lock, self.conn:
            list(self.conn.execute("DELETE FROM actors; DELETE FROM alarms; "
                                   "DELETE FROM attrs; DELETE FROM labels"))
            for ref, at_ms, attrs in found:
                self.conn.execute("INSERT OR IGNORE INTO actors VALUES (?, ?)", (ref.cls, ref.id))
                if at_ms is not None:
                    self.conn.execute("INSERT OR REPLACE INTO alarms VALUES (?, ?, ?)",
                                      (ref.cls, ref.id, at_ms))
                for sql, params in _attrs_writes(ref, attrs):
                    list(self.conn.execute(sql, params))
        log.info("index rebuilt from %d actor databases", len(found))
        return len(found)


# Waiting index writes made at once from the event that queues this many.
_FLUSH_AT = 256


def prepare_layout(data_dir: Path, processes: int) -> None:
    """Before the processes start: if the last run had another number of processes, its
    indexes do not match who owns what now. The new layout's indexes are removed, so
    that each process rebuilds its own from the databases it owns."""
    base = data_dir / "_host"
    base.mkdir(parents=True, exist_ok=True)
    layout = base / "processes"
    try:
        last = int(layout.read_text())
    except (OSError, ValueError):
        last = 1  # older data directories: always one process
    if last == processes:
        return
    for d in (Partition(k, processes).host_dir(data_dir) for k in range(processes)):
        for suffix in ("", "-wal", "-shm"):
            (d / f"index.db{suffix}").unlink(missing_ok=True)
    tmp = base / "processes.new"
    tmp.write_text(f"{processes}\n")
    os.replace(tmp, layout)
    log.info("%d processes now, %d before: each rebuilds its index", processes, last)


def _actor_files(data_dir: Path) -> Iterator[Path]:
    root = data_dir / "actors"
    if root.is_dir():
        yield from root.glob("*/*/*.db")


def _attrs_writes(ref: ActorRef, attrs: Attributes | None
                  ) -> list[tuple[str, tuple[object, ...]]]:
    """The index's statements for an actor's attributes: the old ones forgotten, the new
    ones (if any) written, its labels one row each so that a filter by label is a lookup."""
    out: list[tuple[str, tuple[object, ...]]] = [
        (_FORGET_ATTRS, (ref.cls, ref.id, ref.cls, ref.id))]
    if attrs is not None:
        out.append((_INSERT_ATTRS, (ref.cls, ref.id, attrs.status, attrs.updated_ms,
                                    attrs.labels_json(), attrs.first_ms)))
        out += [(_INSERT_LABEL, (ref.cls, k, v, ref.id)) for k, v in attrs.labels]
    return out


def _read_actor(path: Path) -> tuple[ActorRef, int | None, Attributes | None] | None:
    """An initialized actor's identity, alarm and attributes; a half-created one is
    deleted."""
    try:
        conn = apsw.Connection(str(path))
        # Closing the last connection would checkpoint the WAL into the file: a copy of
        # every frame, which a rebuild has no need of, and which on a nearly full disk
        # fails and leaves it fuller (as the host's own connections, ActorDb._connect).
        conn.config(apsw.SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1)
        try:
            meta, at_ms = host_rows.read_bare(conn)
        finally:
            conn.close()
    except apsw.Error as e:
        log.warning("skipping %s in the rebuild: %s", path, e)
        return None
    if meta.get("initialized") != 1:
        # The host died during on-init: the actor was never created, so nothing stays.
        delete_db_files(path)
        return None
    cls, actor_id = str(meta["class"]), str(meta["id"])
    if paths.db_path(path.parents[3], cls, actor_id) != path:
        log.warning("%s does not belong where it is; skipped", path)
        return None
    return ActorRef(cls, actor_id), at_ms, decoded(meta.get("attrs"))
