"""An actor's SQLite connection (apsw), opened and configured; why each setting:

- WAL with synchronous=NORMAL: the durable point is the WAL's fsync where a guest asks
  for it (storage/wal_sync.py).
- max_page_count caps the file; a write past it fails with SQLITE_FULL.
- locking_mode=EXCLUSIVE: only the host's one connection ever uses an actor's database
  while it serves, so the WAL index lives in the connection's memory instead of a shared
  `-shm` file, and a transaction takes no file locks. Opening a new database no longer
  makes and maps the `-shm` file, and a statement costs less. Another process that opens
  the file while the host has it open gets SQLITE_BUSY.
- What guest SQL may do: its limits and functions (storage/policy.py,
  storage/functions.py), and the authorizer the database gives (storage/actordb.py).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import apsw

from . import functions as sql_functions
from . import policy as sql_policy
from .files import HAS_HOST_SCHEMA, HOST_SCHEMA

Authorizer = Callable[[int, str | None, str | None, str | None, str | None], int]


def open_connection(path: Path, max_pages: int, max_value_bytes: int,
                    authorizer: Authorizer) -> tuple[apsw.Connection, bool]:
    """The connection to `path`, configured, and whether the file lacked the host's
    schema and was given it (a file cut short while it was made)."""
    conn = apsw.Connection(str(path))
    conn.setbusytimeout(5000)
    sql_policy.apply_limits(conn, max_value_bytes)
    sql_functions.install(conn, max_value_bytes)
    # Closing the last connection would checkpoint and remove the WAL, a cost per close:
    # the host closes a sleeping actor's database after each wake, so it keeps the
    # WAL for the next open instead; auto-checkpoints still bound its size.
    conn.config(apsw.SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1)
    # apsw runs a ";"-separated script lazily, one statement per row fetched: the
    # scripts here are consumed with list() so that every statement runs.
    # locking_mode first: it must be set before the first read opens the WAL.
    list(conn.execute("PRAGMA locking_mode=EXCLUSIVE; PRAGMA synchronous=NORMAL; "
                      f"PRAGMA max_page_count={int(max_pages)}"))
    conn.authorizer = authorizer
    if conn.execute(HAS_HOST_SCHEMA).fetchall():
        return conn, False
    # A file cut short while it was made: give it what the template has. (A read, not
    # the schema script: that would be a write on every open.)
    list(conn.execute("PRAGMA journal_mode=WAL"))
    list(conn.execute(HOST_SCHEMA))
    return conn, True
