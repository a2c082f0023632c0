"""`wf.sleep`, `wf.sleep_until`, `wf.wait_for_event` and `wf.continue_as_new`: the core's
primitives that stop a run until a time or an event, or end it. Each is a function of
the run's Cursor (cursor.py), called by `Run`'s method of the same name. A test's mocks
(mocks.py) may make a new sleep pass at once (a duration of 0), or a new wait time out at
once (a timeout of 0)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn

from ...durations import Duration
from ..errors import ContinueAsNew
from .cursor import Cursor
from .kinds import SLEEP, WAIT
from .moments import check_duration, check_time
from .values import check_ms, check_name


def sleep(run: Cursor, name: str, t: object, relative: bool) -> None:
    """Wait `t` from when this position is first reached (`relative`), or until `t`."""
    pos = run.enter()
    if run.recorded(pos):
        run.replay(pos, SLEEP, name)
        return
    check_name(name, "sleep")
    what = f"wf.{'sleep' if relative else 'sleep_until'}({name!r})"
    ms = _duration(run, check_duration if relative else check_time, t, what)
    front = run.frontier
    if front.mocks is not None and front.mocks.skip_sleeps:  # a test's (mocks.py)
        ms, relative = 0, True
    run.new(pos, lambda: front.sleep(pos, name, front.db.now() + ms if relative else ms))


def wait_for_event(run: Cursor, name: str, timeout: Duration | None,
                   timeout_ms: int | None) -> Any:
    """The payload of the oldest event `name` not taken by an earlier wait, or None once
    the timeout has passed (see `Run.wait_for_event`)."""
    pos = run.enter()
    if run.recorded(pos):
        return run.replay(pos, WAIT, name)
    check_name(name, "event")
    what = f"wf.wait_for_event({name!r}): the timeout"
    if (timeout is None) == (timeout_ms is None):
        run.refuse(f"{what}: give one, as timeout= (a duration) or timeout_ms= (an int)")
    ms = (_duration(run, check_duration, timeout, what) if timeout_ms is None
          else _duration(run, check_ms, timeout_ms, f"{what} timeout_ms"))
    front = run.frontier
    if front.mocks is not None and front.mocks.forces_event_timeout(name):  # a test's
        ms = 0
    return run.new(pos, lambda: front.wait(pos, name, ms))


def continue_as_new(run: Cursor, input: Any) -> NoReturn:
    """End this run; a fresh one of the same instance begins with `input`."""
    run.enter()
    run.stop(ContinueAsNew(input))


def _duration(run: Cursor, check: Callable[[object, str], int], t: object, what: str) -> int:
    try:
        return check(t, what)
    except (TypeError, ValueError) as e:
        run.refuse(str(e))
