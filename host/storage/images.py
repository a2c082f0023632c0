"""Schema images: a class's new actors start from the template with its on-init's
schema-only script already applied.

A new actor's database starts as a copy of the template, and its on-init then makes its
tables, each actor the same. When a class's on-init ran a single schema-only script, the
host keeps the template with that script applied (`SchemaImage`) and makes the class's next
new actors from it; their on-init's script, when it comes, is not run again. Should an
on-init do anything else first, the database goes back to the plain template before it
runs, so no guest ever sees a table it did not make (`ActorDb.speculative`).

Making an image replays a guest's script, whose cost the guest chose (thousands of
CREATE TABLEs cost SQLite a scan of the schema each): it runs as a guest statement does,
under the event's deadline and lending its run slot while long (storage/watch.py), with
the guest's limits (storage/policy.py) and no more than `IMAGE_MAX_BYTES` of file, in a
file beside the actor's database, inside the data directory. Past any of these, the
class simply gets no image. A host killed while making one leaves that file behind (with
its WAL and shared memory, or the half-written copy of the template): the start that
follows an unclean stop removes them (`remove_leftovers`), by the host's own name for
them, which no actor's file can have.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import apsw

from ..testing import crashpoints
from . import policy as sql_policy
from .files import create_from_template
from .watch import WATCH, Loan, StatementWatch

log = logging.getLogger("wkhost")

# What a schema-only script may do, seen by the authorizer while it is prepared: make
# tables, indexes, triggers and views (SQLite writes and reads sqlite_master for them,
# reads the new tables' columns for their indexes and checks, and asks for a REINDEX of
# each new index), in a transaction. Anything else (a row written, a function called, a
# pragma) could make the script's result depend on more than the template, so it is not
# kept as an image.
SCHEMA_OPS = frozenset({
    apsw.SQLITE_CREATE_TABLE, apsw.SQLITE_CREATE_INDEX, apsw.SQLITE_CREATE_TRIGGER,
    apsw.SQLITE_CREATE_VIEW, apsw.SQLITE_TRANSACTION, apsw.SQLITE_READ, apsw.SQLITE_REINDEX,
})
SCHEMA_TABLES = frozenset({"sqlite_master", "sqlite_schema"})

# The largest image a class keeps: its bytes stay in memory for the class's life, and are
# written out for each of its new actors.
IMAGE_MAX_BYTES = 8 << 20

# The file an image is made in, beside an actor's database, and what SQLite and
# create_from_template make beside it. An actor's files end in ".db" (-wal, -shm,
# -journal), so no actor's file has this name.
_WORK_FILE = "wk-schema-{pid}.{thread}.image"
_LEFTOVER = re.compile(r"wk-schema-[0-9]+\.[0-9]+\.image"
                       r"(-wal|-shm|-journal|\.new[0-9]+\.[0-9]+)?")
_SHARD = re.compile(r"[0-9a-f]{2}")


@dataclass(frozen=True)
class SchemaImage:
    """The template with one schema-only guest script applied: what a new actor's database
    is once its on-init has run `script`."""

    script: str
    data: bytes


def why_not_built(e: BaseException) -> str:
    """Why `build_schema_image` failed, for the log: its deadline, its size cap, or the
    failure's own text."""
    if isinstance(e, apsw.InterruptError):
        return "making it ran past the event's deadline"
    if isinstance(e, apsw.FullError):
        return f"it would be over {IMAGE_MAX_BYTES} bytes"
    return str(e)


def build_schema_image(script: str, directory: Path, deadline: float = math.inf,
                       loan: Loan | None = None, watch: StatementWatch = WATCH
                       ) -> SchemaImage:
    """Apply `script` to a copy of the template, on the side, once a class: in a file of
    `directory`'s, interrupted at `deadline`, lending what `loan` lends while it runs
    long. Raises apsw.Error (InterruptError past the deadline, FullError past
    IMAGE_MAX_BYTES) or OSError; it leaves no file behind either way."""
    path = directory / _WORK_FILE.format(pid=os.getpid(), thread=threading.get_ident())
    try:
        create_from_template(path)
        conn = apsw.Connection(str(path))
        try:
            _replay(conn, script, deadline, loan, watch)
            if crashpoints.ARMED:
                crashpoints.hit("schema-image")
        finally:
            conn.close()  # the last connection checkpoints: all of it is in the file
        return SchemaImage(script, path.read_bytes())
    finally:
        for p in (path, *(path.with_name(path.name + s) for s in ("-wal", "-journal"))):
            with contextlib.suppress(OSError):
                p.unlink()


def _replay(conn: apsw.Connection, script: str, deadline: float, loan: Loan | None,
            watch: StatementWatch) -> None:
    """The script, as a guest statement runs: the guest's limits, watched. (The actor's own
    run of it was authorized as guest SQL, and found schema-only.)"""
    sql_policy.apply_limits(conn, sql_policy.DEFAULT_MAX_VALUE_BYTES)
    page_size = int(str(conn.execute("PRAGMA page_size").fetchall()[0][0]))
    list(conn.execute("PRAGMA locking_mode=EXCLUSIVE; "
                      f"PRAGMA max_page_count={IMAGE_MAX_BYTES // page_size}"))
    running = watch.begin(conn, deadline, loan)
    try:
        list(conn.execute(script))
    finally:
        watch.end(running)


def remove_leftovers(data_dir: Path, owns_shard: Callable[[str], bool]) -> int:
    """Remove the files a host killed while making an image left in the actors' directories
    of `data_dir` that this process owns (host/partition.py), matched by their whole name;
    before any event runs, so none of them is in use. Returns how many were removed."""
    removed = 0
    for path in (data_dir / "actors").glob("*/*/wk-schema-*"):
        if not (_LEFTOVER.fullmatch(path.name) and _owned(path.parent.name, owns_shard)
                and path.is_file() and not path.is_symlink()):
            continue
        try:
            path.unlink()
            removed += 1
        except OSError as e:  # it costs only its room: the next unclean start tries again
            log.warning("a schema image's leftover %s cannot be removed: %s", path, e)
    if removed:
        log.info("removed %d file(s) left by schema images being made when the host "
                 "last stopped", removed)
    return removed


def _owned(shard: str, owns_shard: Callable[[str], bool]) -> bool:
    """Whether `shard` is a shard's directory (storage/paths.py) this process owns."""
    return _SHARD.fullmatch(shard) is not None and owns_shard(shard)
