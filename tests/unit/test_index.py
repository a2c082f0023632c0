"""The host's index of actors and alarms (host/index.py), on a real SQLite file: writes
are kept and made together, in order, before any read and at a clean stop."""

from __future__ import annotations

import threading
from pathlib import Path

from wkhost.index import Index
from wkhost.types import ActorRef

A, B = ActorRef("c", "a"), ActorRef("c", "b")


def test_kept_writes_are_made_in_order_before_a_read(tmp_path: Path) -> None:
    index = Index(tmp_path)
    try:
        for write, args in ((index.add_actor, (A,)), (index.set_alarm, (A, 5)),
                            (index.add_actor, (B,)), (index.remove_actor, (B,)),
                            (index.set_alarm, (A, 7))):
            index.try_write(write, *args)
        assert index.actors("c") == ["a"]
        assert index.alarms() == [(A, 7)]
        index.try_write(index.remove_actor, A)
        index.try_write(index.add_actor, A)  # deleted, then made again
        assert index.actors("c") == ["a"] and index.alarms() == []
    finally:
        index.close()


def test_a_clean_stop_makes_the_kept_writes(tmp_path: Path) -> None:
    index = Index(tmp_path)
    index.try_write(index.add_actor, A)
    index.try_write(index.set_alarm, A, 9)
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
                index.try_write(index.add_actor, ref)
                index.try_write(index.set_alarm, ref, i)
            index.try_write(index.remove_actor, ref)
            index.try_write(index.add_actor, ref)
            index.try_write(index.set_alarm, ref, 1000 + n)

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
