"""Whether an actor's database changed, told by its files alone: no event, no read of
what the guest stored (the console's open instance page asks it every few seconds, and
reads the instance again only when it changed).

A commit appends to the write-ahead log (`-wal`), and a checkpoint writes the database
file and empties the log: either moves the marker. An empty log is left out, because
opening the database makes one (a read opens it too: counting it would have every
read look like a change). What it may say wrongly is only ever "changed": a
checkpoint of what was already seen moves it once, and the page reads the instance once
more for nothing.
"""

from __future__ import annotations

import os
from pathlib import Path


def change_marker(db: Path) -> str | None:
    """A text that moves with every committed change of database `db`; None if it does
    not exist (never made, or deleted)."""
    try:
        st = os.stat(db)
    except FileNotFoundError:
        return None
    marker = f"{st.st_mtime_ns}.{st.st_size}"
    try:
        wal = os.stat(f"{db}-wal")
    except FileNotFoundError:
        return marker
    return marker if wal.st_size == 0 else f"{marker}.{wal.st_mtime_ns}.{wal.st_size}"
