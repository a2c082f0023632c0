"""What the instance publishes to the host's index, so that operators list it without
waking it (WIT `attributes`): its state, when that state began, and its labels.

`Store` calls `Publisher.state` with every write of the instance's state, just before
the write itself; the host commits what is published with the next write, so the state
listed is the state written. Most writes leave the state as it was (a waiting instance's
every run ends "waiting"): only a change is published, so an event that changes no state
costs no host call. The Publisher knows what it published itself: a new instance (a fresh
instance of the guest, after a restart or a sleep) publishes its first state write again.

Labels (labels.py) ride on the same call. A run that sets some (`set_labels`) leaves its
set here, and the next state write publishes it if it differs from what this Publisher
published (with the time the state began, when the state itself did not change), having
written it to the instance's table first if it differs from what is stored there. An
instance that sets no label never reaches that path: its state writes cost what they
did before labels.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..backend import Backend
from . import labels as _labels
from .labels import Labels


class Publisher:
    def __init__(self, db: Backend) -> None:
        self.db = db
        self._published: str | None = None  # the state this Publisher last published
        self._at = 0  # when that state began
        self._labels: Labels | None = None  # the labels it last published (None: none)
        self._stored: Labels | None = None  # the instance's stored labels (None: unread)
        self.wanted: Labels | None = None  # the labels a run set, not yet published

    def state(self, state: str, updated_at: int) -> None:
        """The instance's state is about to be written as `state` at `updated_at`."""
        wanted = self.wanted
        if state == self._published and wanted is None:
            return
        self.wanted = None
        labels = None if wanted is None or wanted == self._labels else wanted
        if labels is not None and labels != self._stored:
            # Before the publish, so that the publish commits with the state write.
            self.db.exec_many(_labels.writes(labels))
            self._stored = labels
        if state == self._published:
            if labels is None:
                return
            updated_at = self._at  # the state goes on: it began when it began
        self.db.publish(state, updated_at, labels)
        self._published, self._at = state, updated_at
        if labels is not None:
            self._labels = labels

    def set_labels(self, given: Mapping[str, str | None], what: str) -> None:
        """A run's `set_labels`: its set so far, with `given` applied (published with the
        next state write). Raises ValueError past the host's bounds, StoreFault."""
        base = self.wanted if self.wanted is not None else self.stored()
        self.wanted = _labels.merged(base, given, what)

    def stored(self) -> Labels:
        """The instance's labels as stored (read once, then kept)."""
        if self._stored is None:
            self._stored = _labels.read(self.db)
        return self._stored

    def start_labels(self, labels: Labels) -> None:
        """A start that creates the instance gave `labels`: stored now, before the
        create, whose publish of its state carries them (as the parent a child's start
        records: children/registry.py)."""
        self._stored = labels
        if labels:
            self.db.exec_many(_labels.writes(labels))
            self.wanted = labels

    def forget(self) -> None:
        """Storage failed: what was stored and published may not be what this Publisher
        thinks; the labels are read and published again when next set."""
        self._labels = self._stored = None
