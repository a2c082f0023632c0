"""How each kind of final journal entry answers its position when a run replays it: the
primitive that must have recorded it, and what it gives back (kinds.py has the kinds).
The cursor (cursor.py) checks the primitive and the name, then answers; a kind missing
here is one this runner does not know (a JournalError). The pending kinds are never in a
journal: the Frontier handles them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .kinds import (
    EMITTED,
    GROUP_SETTLED,
    NOW_TAKEN,
    PATCH_MARKER,
    RANDOM_TAKEN,
    SLEEP,
    SLEEP_PASSED,
    STEP,
    STEP_FAILED,
    STEP_RETURNED,
    STEP_RETURNED_TAGGED,
    UPDATE,
    UPDATE_APPLIED,
    UPDATE_DONE,
    UUID_TAKEN,
    WAIT,
    WAIT_TIMED_OUT,
    WAIT_TOOK_EVENT,
    WAIT_TOOK_EVENT_TAGGED,
)
from .values import revive

Answer = Callable[[Any], Any]  # the recorded result -> what the primitive returns


def _returned(result: Any) -> Any:
    return True, result, None, 0  # a step's Outcome (attempt.py)


def _returned_tagged(result: Any) -> Any:
    return True, revive(result), None, 0


def _failed(result: Any) -> Any:
    error, attempts = result
    return False, None, error, attempts


def _nothing(_result: Any) -> None:
    return None


def _value(result: Any) -> Any:
    return result


# kind -> (the primitive that records it, or None for "its own call", and its answer). A
# helper's value, a marker, an emit and a group's record answer with the recorded value
# (a patch marker never gets here but as a reorder: patched() reads markers itself).
REPLAY: dict[str, tuple[str | None, Answer]] = {
    STEP_RETURNED: (STEP, _returned),
    STEP_RETURNED_TAGGED: (STEP, _returned_tagged),
    STEP_FAILED: (STEP, _failed),
    SLEEP_PASSED: (SLEEP, _nothing),
    WAIT_TOOK_EVENT: (WAIT, _value),
    WAIT_TOOK_EVENT_TAGGED: (WAIT, revive),
    WAIT_TIMED_OUT: (WAIT, _nothing),
    NOW_TAKEN: (None, _value),
    RANDOM_TAKEN: (None, _value),
    UUID_TAKEN: (None, _value),
    PATCH_MARKER: (None, _value),
    EMITTED: (None, _value),
    GROUP_SETTLED: (None, _value),  # a group's record: groups/calls.py reads it
    UPDATE_APPLIED: (UPDATE, _value),  # an update's: updates/taking.py reads them
    UPDATE_DONE: (UPDATE, _value),
}
