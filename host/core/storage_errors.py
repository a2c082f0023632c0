"""The storage layer's failures, as core catches them (SQLite's, through apsw).

The error type is storage's own, and apsw belongs to storage/ alone: once storage exports
it (`StorageError = apsw.Error` in storage/actordb.py, asked for in issue 24), this
module takes it from there and core names apsw nowhere. Until then this is the one place.
"""

from __future__ import annotations

import apsw

StorageError = apsw.Error
