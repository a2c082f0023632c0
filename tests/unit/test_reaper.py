"""The reaper drops the instances handed to it on its own thread; `settle` waits for
them; past MAX_WAITING the caller keeps the drop."""

from __future__ import annotations

import threading
import weakref

from wkhost.engine.reaper import MAX_WAITING, Reaper


class Held:
    """Stands in for an instance: records the thread its last reference went on."""

    def __init__(self, gone: list[str], hold: threading.Event | None = None) -> None:
        self._gone, self._hold = gone, hold

    def __del__(self) -> None:
        if self._hold is not None:
            self._hold.wait(10)
        self._gone.append(threading.current_thread().name)


def test_an_instance_is_dropped_on_the_reapers_thread_and_settle_waits_for_it() -> None:
    gone: list[str] = []
    reaper = Reaper()
    inst = Held(gone)
    ref = weakref.ref(inst)
    assert reaper.drop(inst)
    del inst
    reaper.settle()
    assert ref() is None and gone == ["wk-reaper"]
    reaper.stop()


def test_past_the_waiting_cap_the_caller_drops_its_own() -> None:
    gone: list[str] = []
    hold = threading.Event()
    reaper = Reaper()
    # The first one blocks the thread while it drops; the queue then fills up.
    assert reaper.drop(Held(gone, hold))
    accepted = [reaper.drop(Held(gone)) for _ in range(MAX_WAITING + 3)]
    assert accepted.count(False) >= 3
    hold.set()
    reaper.settle()
    assert gone.count("wk-reaper") == accepted.count(True) + 1
    assert gone.count(threading.current_thread().name) == accepted.count(False)
    reaper.stop()
