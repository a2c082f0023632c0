"""What the deterministic helpers record, and their one statement.

`wf.now()`, `wf.random()`, `wf.uuid()` and the marker of `wf.patched(id)` (kinds N, R, U,
V) take a position each, like a step. The statement is a plain `exec`, never synced by
itself: the run's next durable write (a sleep's wake time, a wait's deadline, an event
taken) or its last write (end_run, finish, a bad run), which syncs what the run recorded
(`Frontier.unsynced`), makes it durable. Until then nothing has reported it: statuses are
answered in other events. A crash before that loses it with the run's unsynced step
results, and the next run draws a new value, as it would run such a step again.
"""

from __future__ import annotations

import os

from ..backend import Backend

# A new position: past the journal and not the pending entry, so no row is there (a row
# would mean the cached journal is stale; the insert's error is then a StoreFault, and
# the runner drops the cache and retries).
_PUT = ("/*wk:recorded*/ INSERT INTO _wk_wf_step (pos, kind, name, result, updated_at)"
        " VALUES (?, ?, ?, ?, ?)")

_TWO_53 = float(1 << 53)


def put_recorded(db: Backend, pos: int, kind: str, name: str, text: str, now: int) -> None:
    """Insert the final entry `kind` at `pos`, with its value's JSON `text`."""
    db.exec(_PUT, (pos, kind, name, text, now))


def random_float() -> float:
    """A float in [0, 1) from 53 random bits, the precision of `random.random()`.

    os.urandom is WASI's random_get in a guest; the `random` module would need a seed,
    and its state would not survive the instance anyway."""
    return (int.from_bytes(os.urandom(7), "big") >> 3) / _TWO_53


def uuid4() -> str:
    """A random UUID (RFC 4122 version 4) as its usual text, made here so that a guest
    need not import the `uuid` module."""
    b = bytearray(os.urandom(16))
    b[6] = (b[6] & 0x0F) | 0x40  # version 4
    b[8] = (b[8] & 0x3F) | 0x80  # the RFC 4122 variant
    h = b.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
