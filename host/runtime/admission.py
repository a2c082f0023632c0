"""Whether a new actor may be made: a bound on how many actors this process keeps on
disk, and on how little room the data directory's disk may be left with.

Why: any request, the public's too, can name a new actor, and an actor that keeps
anything is a file. Actors that keep nothing leave no file (events/eviction.py), so only
actors whose guests chose to write count; the bounds stop a flood of those from filling
the disk. They refuse only new actors: every existing one is still served, and keeps
the room the disk floor leaves for its own growth.

Places (`ActorSlot.place`): an actor on disk that keeps something holds one (`KEPT`,
counted in `actors`). One that holds none (a new actor, or one that has written nothing
yet, warm or not) takes one for each event it runs (`HELD`), checked and counted in one
step under a lock, so that no number of creations at once passes the bound. At the
event's end (`settle`), the place is kept if the actor now keeps something, or given
back: an actor that has written nothing holds no place between its events, and is
refused past the bound like any new actor, having nothing to lose.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Protocol, TypeVar

from ..errors import ActorLimit

NO_PLACE, HELD, KEPT = 0, 1, 2


class Placed(Protocol):
    """What admission sees of an actor (the events' ActorSlot): its place, and nothing else."""

    place: int


P = TypeVar("P", bound=Placed)


class Admission:
    def __init__(self, data_dir: Path, max_actors: int, min_free_disk_bytes: int) -> None:
        self._data_dir = data_dir
        self._max_actors = max_actors
        self._min_free = min_free_disk_bytes
        self._lock = threading.Lock()
        self.actors = 0  # kept on disk, in this process's share: set at start from the index
        self.held = 0  # places held by the running events of actors that keep nothing yet

    def known(self, slot: Placed) -> None:
        """An actor found on disk holds its place: counted at start (from the index), or
        when it first kept something."""
        if slot.place == NO_PLACE:
            slot.place = KEPT

    def take(self, slot: Placed) -> None:
        """Before an event of an actor that holds no place: hold one for the event, or
        raise ActorLimit past either bound."""
        if slot.place != NO_PLACE:
            return
        with self._lock:
            if self.actors + self.held >= self._max_actors:
                raise ActorLimit(f"this host keeps at most {self._max_actors} actors "
                                 "(--max-actors); existing actors are still served")
            if self._min_free:
                free, floor = _room(self._data_dir, self._min_free)
                if free < floor:
                    raise ActorLimit(f"the data directory's disk is nearly full: "
                                     f"{free >> 10} KiB free, under the {floor >> 10} KiB "
                                     "kept for existing actors (--min-free-disk-mb); they "
                                     "are still served")
            self.held += 1
        slot.place = HELD

    def settle(self, slot: P, keeps: Callable[[P], bool]) -> None:
        """At an event's end: an actor that now `keeps` something keeps its place (or is
        counted, should it have written without one); else a held place is given back."""
        if slot.place == KEPT:
            return
        kept = keeps(slot)
        if slot.place == NO_PLACE and not kept:
            return
        with self._lock:
            if slot.place == HELD:
                self.held -= 1
            if kept:
                self.actors += 1
        slot.place = KEPT if kept else NO_PLACE

    def gone(self, slot: Placed) -> None:
        """The actor's files went: its place, if it held one, is free."""
        with self._lock:
            if slot.place == KEPT:
                self.actors = max(0, self.actors - 1)
            elif slot.place == HELD:
                self.held -= 1
        slot.place = NO_PLACE


def _room(d: Path, min_free: int) -> tuple[int, int]:
    """The bytes free on `d`'s disk, and the floor: `min_free`, or a twentieth of the
    disk on one smaller than twenty times that (a small volume keeps a share)."""
    st = os.statvfs(d)
    return st.f_bavail * st.f_frsize, min(min_free, st.f_blocks * st.f_frsize // 20)
