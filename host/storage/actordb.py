"""One SQLite database per actor (apsw): the host's connection to it, and guest SQL.

Configuration, and why:
- WAL with synchronous=NORMAL: a commit survives a crash of the process (the WAL is in the
  OS page cache) but not a power loss. `exec-durable` then fsyncs the WAL, which makes that
  commit and every earlier one durable, the same guarantee synchronous=FULL gives, at one
  fsync only where the guest asked for it.
- A new database's file is a copy of a template (storage/files.py), made durable by its
  own syncs before its first durable write returns.
- What guest SQL may do (the authorizer, the reserved names, the limits on values and
  temporary data) is storage/policy.py. The host's own statements name `main.` tables,
  so that nothing of the guest's could stand in for them.
- A guest statement that runs long is cut at its event's deadline, and lends its run
  slot to other events meanwhile (storage/watch.py).
- max_page_count caps the file; a write past it fails with SQLITE_FULL.
- locking_mode=EXCLUSIVE: only the host's one connection ever uses an actor's database
  while it serves, so the WAL index lives in the connection's memory instead of a shared
  `-shm` file, and a transaction takes no file locks. Opening a new database no longer
  makes and maps the `-shm` file, and a statement costs less. Another process that opens
  the file while the host has it open gets SQLITE_BUSY.
- Schema images (storage/images.py): a class's new actors may start from the template
  with its on-init's schema script applied; `speculative` is that script until the
  guest's first statement shows whether it is the same.
- In cluster mode (`replica`): a durable write is acknowledged once the changes are in
  the cluster's store (core/replication.py), not by the WAL's fsync. The connection's
  changes are captured as changesets (storage/changes.py), which see DDL move the
  schema's version, so that the next write sends a snapshot instead.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import apsw

from .. import metrics
from ..testing import crashpoints
from . import attributes, files
from . import functions as sql_functions
from . import policy as sql_policy
from .files import (
    HAS_HOST_SCHEMA,
    HOST_SCHEMA,
    NewFileSync,
    delete_db_files,
    fsync_dir,
    pending_new_file_sync,
    start_new_file_sync,
)
from .images import SCHEMA_OPS, SCHEMA_TABLES, SchemaImage
from .replica import Replica
from .statements import DEFAULT_MAX_RESULT_BYTES, Rows, SqlValue, run, sql_error
from .statements import SqlError as SqlError  # what its callers catch, as before
from .watch import WATCH, Loan, StatementWatch

if TYPE_CHECKING:
    from .changes import Capture

# What core catches of SQLite's failures, without naming apsw (storage's alone).
StorageError = apsw.Error


class ActorDb:
    """An actor's database file. Used by one thread at a time (the actor's event)."""

    watch: StatementWatch = WATCH  # who cuts and lends its long statements
    # What one statement's rows may hold (storage/statements.py); the host's is the cap
    # on its instance's memory (core/lifecycle.py): the guest could not receive more.
    max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES

    def __init__(self, path: Path, max_pages: int, image: SchemaImage | None = None,
                 max_value_bytes: int = sql_policy.DEFAULT_MAX_VALUE_BYTES,
                 replica: Replica | None = None) -> None:
        """Open the actor's database, made from the template (or `image`) if missing."""
        self.path = path
        self.replica = replica
        self.capture: Capture | None = None
        self._max_pages = max_pages
        self._max_value_bytes = max_value_bytes
        # Made here, now: a new actor's. Only such a database may start as an image.
        self.created = not path.exists()
        if self.created:
            files.create_from_template(path, image.data if image else None)
        # Cluster mode: a file made here, whatever the store holds of the actor, goes
        # there whole with its first write, never as changes to an older state.
        self.schema_changed = self.created and replica is not None
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
        # Attributes the guest published outside a transaction (storage/attributes.py),
        # encoded: they commit with its next statement, or at the event's end.
        self.pending_attrs: str | None = None
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
        # Closing the last connection would checkpoint and remove the WAL, a cost per close:
        # the host closes a sleeping actor's database after each wake, so it keeps the
        # WAL for the next open instead; auto-checkpoints still bound its size.
        conn.config(apsw.SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1)
        # apsw runs a ";"-separated script lazily, one statement per row fetched: the
        # scripts here are consumed with list() so that every statement runs.
        # locking_mode first: it must be set before the first read opens the WAL.
        list(conn.execute("PRAGMA locking_mode=EXCLUSIVE; PRAGMA synchronous=NORMAL; "
                          f"PRAGMA max_page_count={int(max_pages)}"))
        conn.authorizer = self._authorize
        if not conn.execute(HAS_HOST_SCHEMA).fetchall():
            # A file cut short while it was made: give it what the template has. (A
            # read, not the schema script: that would be a write on every open.)
            list(conn.execute("PRAGMA journal_mode=WAL"))
            list(conn.execute(HOST_SCHEMA))
            self.schema_changed = True
        if self.replica is not None:
            from . import changes  # cluster mode's alone

            self.capture = changes.Capture(conn)

    # -- the authorizer -------------------------------------------------------------
    def _authorize(self, op: int, p1: str | None, p2: str | None, db: str | None,
                   trigger: str | None) -> int:
        if not self._guest:
            return sql_policy.host_rule(trigger)
        if self._watching and op not in SCHEMA_OPS and (p1 or "").lower() not in SCHEMA_TABLES:
            self._schema_only = False
        return sql_policy.guest_rule(op, p1, p2, db, self._names_host)

    # -- statements -------------------------------------------------------------------
    def host_exec(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """The host's own statements: not authorized as guest SQL. Through the one runner
        of every read, whose every failure is an apsw.Error (storage/statements.py)."""
        rows = Rows(self.max_result_bytes)
        run(self.conn, sql, params, True, rows)
        return rows.rows

    def first_host_write(self, sql: str, params: Sequence[Any] = ()) -> None:
        """The host's first write to a database it has just made, whose WAL file does not
        exist yet: without SQLite's sync of the new WAL's header and of its directory.

        With synchronous=NORMAL, the first frame written to a WAL makes SQLite fdatasync
        the header, then the directory (the new file's entry): two syncs on the
        event's run slot, for a commit that is not durable anyway. The header sync
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
                   loan: Loan | None = None, into: Rows | None = None,
                   ) -> tuple[list[str], list[Any]]:
        """Run one guest statement (or a ";"-separated script), its rows into `into` (by
        default kept as they are, up to `max_result_bytes`). `io_wait` wraps what
        may run without the event's run slot: the fsync a durable write ends with. A
        statement that runs long is interrupted at `deadline`, and lends what `loan`
        lends (its run slot, its place among the working event threads) while it runs
        (storage/watch.py), so that hostile SQL holds no other event up."""
        if into is None:
            into = Rows(self.max_result_bytes, deadline)
        if crashpoints.ARMED:
            crashpoints.statement(sql, "before")
        self._guest_statements += 1
        if self.speculative is not None:
            if sql == self.speculative and not params:
                # The database already is what this script makes of the template.
                self.speculative = None
                return self._after_statement(sql, durable, io_wait, [], into.rows)
            self._abandon_speculation()
        self._watching = self._watch and self._guest_statements == 1 and not params
        self._schema_only = True
        try:
            if self.pending_attrs is None:
                columns = self._run_guest(sql, params, deadline, loan, into)
            else:
                columns = self._run_with_attrs(sql, params, deadline, loan, into)
        finally:
            watched, self._watching = self._watching, False
        if watched and self._schema_only and not columns and not into.count \
                and not self.conn.in_transaction:
            self._schema_first = sql
        return self._after_statement(sql, durable, io_wait, columns, into.rows)

    def _run_guest(self, sql: str, params: Sequence[SqlValue], deadline: float,
                   loan: Loan | None, into: Rows) -> list[str]:
        """The statement itself, under the guest's rules and its event's deadline."""
        self._guest = True
        self._names_host = sql_policy.names_host(sql)
        running = self.watch.begin(self.conn, deadline, loan)
        changes_before = self.conn.total_changes()
        try:
            # Never from apsw's statement cache when it names the host's tables: the
            # host's own statement of the same text, prepared without the guest's rules,
            # may be there, and a cached statement is not authorized again.
            return run(self.conn, sql, params, not self._names_host, into)
        except apsw.Error as e:
            raise sql_error(e, self._max_value_bytes) from None
        finally:
            self.watch.end(running)  # takes back what a long statement lent
            # Rows written, even if later rolled back: kept as "this actor keeps
            # something" (the host's after-event), which errs on keeping a file.
            self.wrote_rows = self.wrote_rows or self.conn.total_changes() != changes_before
            self._guest = False

    # -- published attributes (storage/attributes.py) ----------------------------------
    def publish(self, encoded: str) -> None:
        """The guest published: into its open transaction, or kept for its next
        statement (`_run_with_attrs`)."""
        if self.conn.in_transaction:
            self.host_exec(attributes.WRITE, (encoded,))
            self.pending_attrs = None
        else:
            self.pending_attrs = encoded

    def published(self) -> str | None:
        """What the guest last published, committed or not yet."""
        if self.pending_attrs is not None:
            return self.pending_attrs
        rows = self.host_exec(attributes.READ)
        return str(rows[0][0]) if rows else None

    def _run_with_attrs(self, sql: str, params: Sequence[SqlValue], deadline: float,
                        loan: Loan | None, into: Rows) -> list[str]:
        """The guest's statement and the attributes it published before, in one
        transaction: both commit, or neither (they wait for the next statement)."""
        conn, encoded = self.conn, self.pending_attrs
        if conn.in_transaction:  # cannot be: publish writes into an open one
            self.publish(str(encoded))
            return self._run_guest(sql, params, deadline, loan, into)
        list(conn.execute("BEGIN"))
        try:
            self.host_exec(attributes.WRITE, (encoded,))
            out = self._run_guest(sql, params, deadline, loan, into)
        except SqlError as e:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            if "within a transaction" not in str(e):
                raise
            # A script that begins a transaction of its own: the attributes join it.
            out = self._run_guest(sql, params, deadline, loan, into)
            if conn.in_transaction:
                self.publish(str(encoded))
            return out
        if conn.in_transaction:  # else the script ended it: they are written again later
            try:
                list(conn.execute("COMMIT"))
            except apsw.Error as e:
                if conn.in_transaction:  # a COMMIT that meets a full disk rolls back itself
                    conn.execute("ROLLBACK")
                raise sql_error(e, self._max_value_bytes) from None
            self.pending_attrs = None
        return out

    def settle_attrs(self, commit: bool) -> None:
        """At the event's end: attributes no statement took, committed on their own
        (`commit`), or dropped (the event trapped before the write they announced)."""
        encoded, self.pending_attrs = self.pending_attrs, None
        if encoded is not None and commit:
            self.host_exec(attributes.WRITE, (encoded,))

    def _after_statement(self, sql: str, durable: bool,
                         io_wait: Callable[[], AbstractContextManager[Any]],
                         columns: list[str], rows: list[Any],
                         ) -> tuple[list[str], list[Any]]:
        if durable:
            self.durable_pending = True
        if self._sync_due():
            with io_wait():
                self.sync_if_pending()
        if crashpoints.ARMED:
            crashpoints.statement(sql, "after")
        return columns, rows

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
        self.close()
        delete_db_files(self.path)
        files.create_from_template(self.path)
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
            if self.replica is not None:
                self.replica.durable(self)
            else:
                self._fsync_wal()

    def ship_rest(self) -> None:
        """At the event's end, in cluster mode: what it committed without asking for
        durability goes to the store soon (core/replication.py)."""
        if self.replica is not None and not self.conn.in_transaction:
            self.replica.lazy(self)

    def _fsync_wal(self) -> None:
        if self._wal_fd is None:
            self._wal_fd = os.open(str(self.path) + "-wal", os.O_RDONLY)
        os.fsync(self._wal_fd)
        metrics.fsynced(metrics.WAL)
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
        if self.capture is not None:
            self.capture.close()
            self.capture = None
        self.conn.close()
