"""An actor as the cluster's store holds it (`Loaded`), read back by `ClusterStore.load`
and checked before anything is restored from it: each blob's sha256, and sequence
numbers without a gap (CorruptStore otherwise).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any


class CorruptStore(Exception):
    """An actor's data in the store fails its checks: a blob whose sha256 differs, or a
    gap in its sequence numbers."""


@dataclass
class Loaded:
    """An actor as the store holds it: its snapshot (None: no snapshot, only a log) and
    the changesets after it, in order; `last_seq` is the newest of all."""

    snapshot_seq: int
    snapshot: bytes | None
    changes: list[tuple[int, bytes]]
    last_seq: int


def sha256(blob: bytes) -> bytes:
    return hashlib.sha256(blob).digest()


def checked(actor: str, got: list[tuple[Any, ...]]) -> Loaded:
    """Loaded from LOAD's rows, each blob's sha256 verified and the seqs contiguous."""
    last: int | None = None
    snap_seq, snap, changes = 0, None, []
    for kind, seq, blob, digest in got:
        if kind == "a":
            last = int(seq)
            continue
        if sha256(blob) != bytes(digest):
            what = "snapshot" if kind == "s" else "changeset"
            raise CorruptStore(f"{actor}: the {what} at seq {seq} fails its sha256 check")
        if kind == "s":
            snap_seq, snap = int(seq), bytes(blob)
        else:
            changes.append((int(seq), bytes(blob)))
    newest = changes[-1][0] if changes else snap_seq
    expected = list(range(snap_seq + 1, newest + 1))
    if [s for s, _ in changes] != expected or (last is not None and last != newest):
        have = [s for s, _ in changes]
        raise CorruptStore(f"{actor}: its sequence numbers have a gap (snapshot at "
                           f"{snap_seq}, changesets {_ranges(have)}, last written {last})")
    return Loaded(snap_seq, snap, changes, newest)


def _ranges(seqs: list[int]) -> str:
    if not seqs:
        return "none"
    return f"{seqs[0]}..{seqs[-1]} ({len(seqs)})"
