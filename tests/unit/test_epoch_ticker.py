"""The epoch ticker's thread ends when it is stopped, whenever the stop falls."""
import threading

from host.engine.components import IDLE_TICKS, EpochTicker


class _StopMidTick:
    """An engine whose last tick before the ticker falls asleep waits for a stop to be
    said: the stop lands between the tick's wait and its going to sleep."""

    def __init__(self) -> None:
        self.ticks = 0
        self.ticker: EpochTicker | None = None
        self.at_last_tick = threading.Event()

    def increment_epoch(self) -> None:
        self.ticks += 1
        if self.ticks == IDLE_TICKS + 1:  # the tick after which it would sleep
            self.at_last_tick.set()
            assert self.ticker is not None
            self.ticker._stop.wait(5)  # noqa: SLF001 (until the stop is said)


def test_a_stop_said_as_the_ticker_falls_asleep_ends_its_thread() -> None:
    engine = _StopMidTick()
    ticker = EpochTicker(engine)  # type: ignore[arg-type]
    engine.ticker = ticker
    ticker.start()
    assert engine.at_last_tick.wait(10)
    ticker.stop()  # waits a second at most for the thread
    assert not ticker._thread.is_alive()  # noqa: SLF001
