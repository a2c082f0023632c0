"""One SQLite database per actor (apsw): the host's connection to it, and guest SQL.

Configuration, and why:
- The connection's settings (WAL, EXCLUSIVE locking, the page cap) are
  storage/sqlite_connection.py's. A durable write ends with the WAL's fsync; a new database's
  file is a copy of a template (storage/files.py), made durable by its own syncs before
  its first durable write returns: the durable point is storage/wal_sync.py.
- What guest SQL may do (the authorizer, the reserved names, the limits on values and
  temporary data) is storage/policy.py. The host's own statements name `main.` tables,
  so that nothing of the guest's could stand in for them.
- A guest statement that runs long is cut at its event's deadline, and lends its run
  slot to other events meanwhile (storage/watch.py).
- Schema images (storage/images.py): a class's new actors may start from the template
  with its on-init's schema script applied; `speculative` is that script until the
  guest's first statement shows whether it is the same (storage/speculation.py).
- What the guest publishes commits with its next statement (storage/published.py).
- In cluster mode (`working_copy`): a durable write is acknowledged once the changes are in
  the cluster's store (replication/copy.py), not by the WAL's fsync. The connection's
  changes are captured as changesets (storage/changes.py), which see DDL move the
  schema's version, so that the next write sends a snapshot instead.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import apsw

from ..testing import crashpoints
from . import files
from . import policy as sql_policy
from .files import delete_db_files, pending_new_file_sync, start_new_file_sync
from .images import SCHEMA_OPS, SCHEMA_TABLES, SchemaImage
from .published import Published
from .speculation import Speculation
from .sqlite_connection import open_connection
from .statements import DEFAULT_MAX_RESULT_BYTES, Rows, SqlValue, run, sql_error
from .statements import SqlError as SqlError  # what its callers catch, as before
from .wal_sync import WalSync
from .watch import WATCH, Loan, StatementWatch
from .working_copy import WorkingCopy

if TYPE_CHECKING:
    from .changes import Capture

# What core catches of SQLite's failures, without naming apsw (storage's alone).
StorageError = apsw.Error


class ActorDb:
    """An actor's database file. Used by one thread at a time (the actor's event)."""

    watch: StatementWatch = WATCH  # who cuts and lends its long statements
    # What one statement's rows may hold (storage/statements.py); the host's is the cap
    # on its instance's memory (events/lifecycle.py): the guest could not receive more.
    max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES

    def __init__(self, path: Path, max_pages: int, image: SchemaImage | None = None,
                 max_value_bytes: int = sql_policy.DEFAULT_MAX_VALUE_BYTES,
                 working_copy: WorkingCopy | None = None) -> None:
        """Open the actor's database, made from the template (or `image`) if missing."""
        self.path = path
        self.working_copy = working_copy
        self.capture: Capture | None = None
        self._max_pages = max_pages
        self._max_value_bytes = max_value_bytes
        # Made here, now: a new actor's. Only such a database may start as an image.
        self.created = not path.exists()
        if self.created:
            files.create_from_template(path, image.data if image else None)
        # Cluster mode: a file made here, whatever the store holds of the actor, goes
        # there whole with its first write, never as changes to an older state.
        self.schema_changed = self.created and working_copy is not None
        # The script the image stands for, until the guest's first statement: either that
        # script (not run again) or anything else (the plain template comes back first).
        self._speculation = Speculation(image.script) if image and self.created else None
        self.speculation_failed = False
        # The first guest statement of a database made from the plain template, if it
        # was schema-only: what a class's image is learnt from (schema_script).
        self._watch = self.created and image is None
        self._schema_first: str | None = None
        self._watching = False  # the authorizer looks for what is not schema-only
        self._schema_only = True
        self._guest_statements = 0
        self._guest = False
        self._names_host = False  # the running guest script's text holds `_wk_host_`
        self.wrote_rows = False  # a guest statement on this connection changed a row
        # Attributes the guest published outside a transaction, encoded: they commit with
        # its next statement, or at the event's end.
        self.attrs = Published(self, max_value_bytes)
        self._connect()
        if self.created:
            self._sync_new_file()
        else:  # made by this process, closed before its syncs were seen done
            self._wal.new_file = pending_new_file_sync(path)

    def _sync_new_file(self) -> None:
        """Start the new file's own syncs (`sync_new_file`); the first durable write waits
        for them. Started after the open, which has made the WAL, so that the directory's
        sync covers the WAL's entry too."""
        self._wal.new_file = start_new_file_sync(self.path)

    def _connect(self) -> None:
        self._wal = WalSync(self.path)  # before the open, which makes the WAL file
        self.conn, remade = open_connection(self.path, self._max_pages,
                                            self._max_value_bytes, self._authorize)
        self.durable_pending = False
        if remade:
            self.schema_changed = True
        if self.working_copy is not None:
            from . import changes  # cluster mode's alone

            self.capture = changes.Capture(self.conn)

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
        exist yet: without SQLite's syncs of the new WAL (WalSync.first_write)."""
        if self._speculation is not None:
            self._speculation.host_writes.append((sql, params))  # what a failure replays
        self._wal.first_write(self.conn, lambda: self.host_exec(sql, params))

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
        if self._speculation is not None:
            if self._speculation.taken(sql, params):
                self._speculation = None
                return self._after_statement(sql, durable, io_wait, [], into.rows)
            self._abandon_speculation()
        self._watching = self._watch and self._guest_statements == 1 and not params
        self._schema_only = True
        try:
            if self.attrs.pending is None:
                columns = self._run_guest(sql, params, deadline, loan, into)
            else:
                columns = self.attrs.run_with(
                    lambda: self._run_guest(sql, params, deadline, loan, into))
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

    # -- published attributes (storage/published.py): the doors its callers use --------
    @property
    def pending_attrs(self) -> str | None:
        return self.attrs.pending

    def publish(self, encoded: str) -> None:
        self.attrs.publish(encoded)

    def published(self) -> str | None:
        return self.attrs.published()

    def settle_attrs(self, commit: bool) -> None:
        self.attrs.settle(commit)

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
    @property
    def speculative(self) -> str | None:
        """The image's script, until the guest's first statement (storage/speculation.py)."""
        return None if self._speculation is None else self._speculation.script

    def schema_script(self) -> str | None:
        """After on-init: its script, if it ran exactly one statement, on a database made
        from the plain template, and that statement was schema-only and left no
        transaction open: what the class's image can be made of."""
        return self._schema_first if self._guest_statements == 1 else None

    def end_speculation(self) -> None:
        """After on-init: a speculation never taken up (an on-init that ran no SQL) goes
        back to the plain template too."""
        if self._speculation is not None:
            self._abandon_speculation()

    def _abandon_speculation(self) -> None:
        """The guest's first statement is not the image's script: make the database the
        plain template again, with the host's own first writes, before it runs. Rare (a
        class whose on-init varies), and the host then stops using the class's image."""
        writes = [] if self._speculation is None else self._speculation.host_writes
        self._speculation = None
        self.speculation_failed = True
        self.close()
        delete_db_files(self.path)
        files.create_from_template(self.path)
        self._connect()
        self._sync_new_file()
        for sql, params in writes:
            self.first_host_write(sql, params)

    def _sync_due(self) -> bool:
        return self.durable_pending and not self.conn.in_transaction

    def sync_if_pending(self) -> None:
        """fsync the WAL once no transaction is open and a durable write asked for it."""
        if self._sync_due():
            self.durable_pending = False
            if self.working_copy is not None:
                self.working_copy.durable(self)
            else:
                self._fsync_wal()

    def _fsync_wal(self) -> None:
        """The durable point on this machine (storage/wal_sync.py); a door tests and the
        benches wrap to count or fail the fsync."""
        self._wal.fsync()

    def end_event(self) -> bool:
        """Roll back what the event left open. True if there was something to roll back."""
        self.durable_pending = False
        if self.conn.in_transaction:
            self.conn.execute("ROLLBACK")
            return True
        return False

    def close(self) -> None:
        self._wal.close()
        if self.capture is not None:
            self.capture.close()
            self.capture = None
        self.conn.close()
