"""The host's index of actors and alarms (host/storage/index.py), on a real SQLite file: writes
are kept and made together, in order, before any read and at a clean stop."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import pytest
from wkhost.storage.actordb import ActorDb
from wkhost.storage.files import wait_new_files
from wkhost.storage.index import Index
from wkhost.storage.paths import db_path
from wkhost.types import ActorRef

A, B = ActorRef("c", "a"), ActorRef("c", "b")


def test_kept_writes_are_made_in_order_before_a_read(tmp_path: Path) -> None:
    index = Index(tmp_path)
    try:
        index.add_actor(A)
        index.set_alarm(A, 5)
        index.add_actor(B)
        index.remove_actor(B)
        index.set_alarm(A, 7)
        assert index.actors("c") == ["a"]
        assert index.alarms() == [(A, 7)]
        index.remove_actor(A)
        index.add_actor(A)  # deleted, then made again
        assert index.actors("c") == ["a"] and index.alarms() == []
    finally:
        index.close()


def test_a_clean_stop_makes_the_kept_writes(tmp_path: Path) -> None:
    index = Index(tmp_path)
    index.add_actor(A)
    index.set_alarm(A, 9)
    index.close()
    again = Index(tmp_path)
    try:
        assert not again.was_unclean and not again.is_new
        assert again.actors("c") == ["a"] and again.alarms() == [(A, 9)]
    finally:
        again.close()


def test_writes_from_many_threads_keep_each_threads_order(tmp_path: Path) -> None:
    index = Index(tmp_path)
    try:
        def churn(n: int) -> None:
            ref = ActorRef("c", f"t{n}")
            for i in range(300):  # past the batch size: some flushes come from here
                index.add_actor(ref)
                index.set_alarm(ref, i)
            index.remove_actor(ref)
            index.add_actor(ref)
            index.set_alarm(ref, 1000 + n)

        threads = [threading.Thread(target=churn, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        for _ in range(20):
            index.flush()  # as the janitor does, meanwhile
        for t in threads:
            t.join()
        assert index.actors("c") == [f"t{n}" for n in range(4)]
        assert sorted(index.alarms(), key=lambda x: x[1]) == [
            (ActorRef("c", f"t{n}"), 1000 + n) for n in range(4)]
    finally:
        index.close()


def test_a_rebuild_syncs_every_database_it_finds(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A host that died may have left a new database whose own syncs never ran."""
    data = tmp_path / "data"
    made = []
    for actor_id in ("a", "b"):
        path = db_path(data, "c", actor_id)
        db = ActorDb(path, max_pages=64)
        db.host_exec("INSERT INTO _wk_host_meta VALUES ('class', 'c'), ('id', ?), "
                     "('initialized', 1)", (actor_id,))
        db.close()
        made.append(path)
    wait_new_files()  # their own syncs are done: what follows is the rebuild's
    synced: list[tuple[str, str]] = []
    for name in ("fsync", "fdatasync"):
        real = getattr(os, name)

        def record(fd: int, real: Any = real, name: str = name) -> None:
            real(fd)
            path = os.readlink(f"/proc/self/fd/{fd}")
            if Path(path).is_relative_to(tmp_path):  # os's are the process's: ours only
                synced.append((name, path))

        monkeypatch.setattr(os, name, record)
    index = Index(tmp_path / "_host")
    try:
        assert index.rebuild(data) == 2
    finally:
        index.close()
    assert {("fdatasync", str(p)) for p in made} | {("fsync", str(p.parent)) for p in made} \
        <= set(synced)
