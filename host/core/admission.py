"""Whether a new actor may be made: a bound on how many actors this process keeps on
disk, and on how little room the data directory's disk may be left with.

Why: any request, the public's too, can name a new actor, and an actor that keeps
anything is a file. Actors that keep nothing leave no file (core/eviction.py), so only
actors whose guests chose to write count; the bounds stop a flood of those from filling
the disk. They refuse only new actors: every existing one is still served, and keeps
the room the disk floor leaves for its own growth.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from ..errors import ActorLimit


class Admission:
    def __init__(self, data_dir: Path, max_actors: int, min_free_disk_bytes: int) -> None:
        self._data_dir = data_dir
        self._max_actors = max_actors
        self._min_free = min_free_disk_bytes
        self._lock = threading.Lock()
        self.actors = 0  # on disk, in this process's share: set at start from the index

    def admit(self) -> None:
        """Before a new actor's file is made: raise ActorLimit past either bound."""
        if self.actors >= self._max_actors:
            raise ActorLimit(f"this host keeps at most {self._max_actors} actors "
                             "(--max-actors); existing actors are still served")
        if self._min_free:
            free, floor = _room(self._data_dir, self._min_free)
            if free < floor:
                raise ActorLimit(f"the data directory's disk is nearly full: {free >> 10} "
                                 f"KiB free, under the {floor >> 10} KiB kept for existing "
                                 "actors (--min-free-disk-mb); they are still served")

    def added(self) -> None:
        with self._lock:
            self.actors += 1

    def removed(self) -> None:
        with self._lock:
            self.actors = max(0, self.actors - 1)


def _room(d: Path, min_free: int) -> tuple[int, int]:
    """The bytes free on `d`'s disk, and the floor: `min_free`, or a twentieth of the
    disk on one smaller than twenty times that (a small volume keeps a share)."""
    st = os.statvfs(d)
    return st.f_bavail * st.f_frsize, min(min_free, st.f_blocks * st.f_frsize // 20)
