"""A start's idempotency key (`Idempotency-Key`, or the start's `idempotency_key`): a
start sent again with the key of one the instance took answers as that one did, and
delivers its event again never.

Without a key a start is idempotent by its instance's id already (an instance there is
left as it is), but a retry after a lost answer cannot tell "I created it" from "it was
there", and a signal-with-start's retry delivers its event a second time. With one, the
instance keeps each key a start brought (`_wk_wf_start_key`, made by the first, its
last MAX_KEPT), with whether that start created the instance: the same key again
answers `created` as the first answer said, and delivers nothing.

The key is written before the create's durable insert (or inside the signal-with-start's
transaction), so either both are kept or neither: a start cut before them leaves no key,
and its retry creates the instance.
"""

from __future__ import annotations

from typing import Any

from .backend import Backend
from .core.requests import BadRequest

MAX_KEY_CHARS = 256
MAX_KEPT = 1000
HEADER = "idempotency-key"

_TABLE = ("CREATE TABLE IF NOT EXISTS _wk_wf_start_key (key TEXT PRIMARY KEY,"
          " created INTEGER NOT NULL, at INTEGER NOT NULL) WITHOUT ROWID")
_THERE = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_wk_wf_start_key'"
_PUT = "INSERT OR IGNORE INTO _wk_wf_start_key (key, created, at) VALUES (?, ?, ?)"
_FORGET = ("DELETE FROM _wk_wf_start_key WHERE key IN (SELECT key FROM _wk_wf_start_key"
           " ORDER BY at DESC LIMIT -1 OFFSET ?)")
_GET = "SELECT created FROM _wk_wf_start_key WHERE key = ?"


def key_of(msg: dict[str, Any], header: str | None) -> str | None:
    """The start's key: its header's, or its `idempotency_key` (the same, if both).
    Raises BadRequest for one that is not 1 to 256 printable characters, or two."""
    field = msg.get("idempotency_key")
    if field is not None and header is not None and field != header:
        raise BadRequest(400, "bad-request", "the Idempotency-Key header and the start's "
                         "idempotency_key differ: give one")
    key = header if header is not None else field
    if key is None:
        return None
    if not (isinstance(key, str) and 0 < len(key) <= MAX_KEY_CHARS and key.isprintable()):
        raise BadRequest(400, "bad-request", "an idempotency key is text of 1 to "
                         f"{MAX_KEY_CHARS} printable characters")
    return key


def seen(db: Backend, key: str) -> bool | None:
    """Whether the start that brought `key` created the instance; None: no start did."""
    if db.query_row(_THERE) is None:
        return None
    row = db.query_row(_GET, (key,))
    return None if row is None else bool(row[0])


def keep(db: Backend, key: str, created: bool, now: int) -> None:
    """Keep `key` (a plain write: the create's durable insert, or the transaction it is
    in, makes it durable)."""
    db.exec_many([(_TABLE, ()), (_PUT, (key, int(created), now)), (_FORGET, (MAX_KEPT,))])
