"""Schema images: a class's new actors start from the template with its on-init's
schema-only script already applied.

A new actor's database starts as a copy of the template, and its on-init then makes its
tables, each actor the same. When a class's on-init ran a single schema-only script, the
host keeps the template with that script applied (`SchemaImage`) and makes the class's next
new actors from it; their on-init's script, when it comes, is not run again. Should an
on-init do anything else first, the database goes back to the plain template before it
runs, so no guest ever sees a table it did not make (`ActorDb.speculative`).
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

import apsw

from .files import create_from_template

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


@dataclass(frozen=True)
class SchemaImage:
    """The template with one schema-only guest script applied: what a new actor's database
    is once its on-init has run `script`."""

    script: str
    data: bytes


def build_schema_image(script: str) -> SchemaImage:
    """Apply `script` to a copy of the template, on the side, once a class."""
    with tempfile.TemporaryDirectory(prefix="wk-schema-") as d:
        path = Path(d) / "t.db"
        create_from_template(path)
        conn = apsw.Connection(str(path))
        try:
            list(conn.execute(script))
        finally:
            conn.close()  # the last connection checkpoints: all of it is in the file
        return SchemaImage(script, path.read_bytes())
