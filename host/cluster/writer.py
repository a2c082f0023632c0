"""Cluster mode's one writer to the store: every append and snapshot of this node's
actors, in the order they were made, in batches (group commit).

Why one thread: an actor's writes must reach the store in their order, and a durable
write acknowledges every earlier one of its actor, `exec`'s included. A FIFO queue with
one consumer gives both, and whatever queues while a batch is in PostgreSQL goes in
the next one, in one statement (`append_many`), so that eight writers cost about one
round trip, not eight.

While PostgreSQL cannot be reached, the batch is tried again, with a growing pause, until
it goes or the writer stops: the events that wait on it wait, up to their deadlines, and
nothing acknowledged is lost. A retried batch whose first try did commit finds its
rows there at the same epoch with the same changesets, and counts them as written
(ClusterStore.append_many); a snapshot's retry is refused (it is there), its copy then
restored from the store, which has it.
"""

from __future__ import annotations

import functools
import logging
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Any

from .connections import StoreUnavailable
from .store import AppendRow, ClusterStore

log = logging.getLogger("wkhost")

_BATCH = 256  # rows in one statement at most
_PAUSE_S = (0.05, 1.0)  # the retry's first and longest pause while the store is away
_SLOW_S = 5.0  # a batch slower than this is logged


@dataclass
class SnapshotWrite:
    """`ClusterStore.snapshot`'s arguments."""

    actor: str
    shard: int
    epoch: int
    node_id: str
    seq: int
    db: bytes
    alarm_at_ms: int | None
    attrs: str | None
    cls: str
    id: str


@dataclass
class DeleteWrite:
    """`ClusterStore.delete_actor`'s arguments."""

    actor: str
    shard: int
    epoch: int
    node_id: str


@dataclass
class Barrier:
    """Nothing to write: done once every write queued before it is."""


Write = AppendRow | SnapshotWrite | DeleteWrite | Barrier
Item = tuple[Write, "Future[bool]"]


class Writer:
    def __init__(self, store: ClusterStore) -> None:
        self._store = store
        self._queue: queue.SimpleQueue[Item | None] = queue.SimpleQueue()
        self._stopping = threading.Event()
        self._drain_failed_at = -float("inf")
        self._thread = threading.Thread(target=self._loop, name="wk-replica-writer",
                                        daemon=True)

    def start(self) -> None:
        self._thread.start()

    def submit(self, write: Write) -> Future[bool]:
        """True once the write is committed in the store, False if it was refused."""
        done: Future[bool] = Future()
        self._queue.put((write, done))
        return done

    def drain(self, timeout_s: float = 2.0) -> bool:
        """Wait until every write queued so far is committed or refused (a shard about
        to be released: the node that takes it must find them). False on the timeout;
        while the store is away, once: the shards lost together then wait no more."""
        if not self._thread.is_alive():  # stopped: stop() wrote what was queued
            return self._queue.empty()
        if time.monotonic() - self._drain_failed_at < timeout_s:
            return False
        try:
            self.submit(Barrier()).result(timeout=timeout_s)
        except FutureTimeout:
            self._drain_failed_at = time.monotonic()
            return False
        return True

    def stop(self, timeout_s: float = 5.0) -> None:
        """Write what is queued (for up to `timeout_s` while the store is away), then end."""
        self._queue.put(None)
        self._thread.join(timeout_s)
        self._stopping.set()
        self._thread.join(1.0)

    def _loop(self) -> None:
        try:
            self._batches()
        except BaseException:  # never silently: every later durable write would wait
            log.exception("the cluster's writer stopped")
            raise

    def _batches(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                return
            items = [first]
            while len(items) < _BATCH:
                try:
                    more = self._queue.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    self._write(items)
                    return
                items.append(more)
            self._write(items)

    def _write(self, items: list[Item]) -> None:
        """Runs of appends go as one statement each; a snapshot goes alone, in its place."""
        i = 0
        while i < len(items):
            j = i
            while j < len(items) and isinstance(items[j][0], AppendRow):
                j += 1
            if j > i:
                rows = [w for w, _ in items[i:j] if isinstance(w, AppendRow)]
                self._settle(items[i:j], functools.partial(self._store.append_many, rows))
                i = j
            else:
                self._settle(items[i:i + 1], functools.partial(self._one, items[i][0]))
                i += 1

    def _one(self, write: Write) -> list[bool]:
        if isinstance(write, Barrier):
            return [True]
        if isinstance(write, SnapshotWrite):
            return [self._store.snapshot(**vars(write))]
        assert isinstance(write, DeleteWrite)
        return [self._store.delete_actor(**vars(write))]

    def _settle(self, items: list[Item], call: Callable[[], list[bool]]) -> None:
        started = time.monotonic()
        try:
            results = self._retried(call)
        except BaseException as e:  # noqa: BLE001 - every waiter hears of it
            for _, done in items:
                done.set_exception(e)
            return
        took = time.monotonic() - started
        if took > _SLOW_S:  # what a durable write that times out (504) waited on
            log.warning("a batch of %d writes took %.1f s in the cluster's store",
                        len(items), took)
        for (_, done), ok in zip(items, results, strict=True):
            done.set_result(ok)

    def _retried(self, call: Callable[[], Any]) -> Any:
        pause, said = _PAUSE_S[0], False
        while True:
            try:
                out = call()
            except StoreUnavailable as e:
                if self._stopping.is_set():
                    raise
                if not said:
                    log.warning("the cluster's store cannot be reached; writes wait: %s", e)
                    said = True
                time.sleep(pause)
                pause = min(pause * 2, _PAUSE_S[1])
                continue
            if said:
                log.info("the cluster's store is back; the waiting writes went")
            return out
