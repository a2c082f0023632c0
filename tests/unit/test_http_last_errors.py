"""The http interface's last failed fetch of each event (host/interfaces/http.py's
LastErrors): an event reads its own, the latest, and its entry goes with the event; the
kinds it notes are the WIT's `fetch-error-kind`."""

from __future__ import annotations

import gc
from typing import Any, cast, get_args

from wkhost.fetch.errors import ErrorKind
from wkhost.interfaces.http import NARROWED_DEADLINE, LastErrors

from .test_wit_error_kinds import cases


class _Event:
    """Stands for events/event.py's Event: an object that can be weakly referenced."""


def test_each_event_reads_its_own_latest_failure() -> None:
    table = LastErrors()
    a, b = cast(Any, _Event()), cast(Any, _Event())
    assert table.of(a) is None
    assert table.note(a, "connect", "connect: refused") == "connect: refused"
    table.note(b, "denied", "denied: 10.0.0.1 is not allowed")
    table.note(a, "timeout", "timeout: the 200 ms timeout passed")
    assert table.of(a) == ("timeout", "timeout: the 200 ms timeout passed")
    assert table.of(b) == ("denied", "denied: 10.0.0.1 is not allowed")


def test_an_events_entry_goes_with_the_event() -> None:
    table = LastErrors()
    ev: Any = _Event()
    table.note(ev, "connect", "connect: refused")
    table.note(ev, "denied", "denied: no")  # noted again: still one entry to drop
    assert len(table) == 1
    del ev
    gc.collect()
    assert len(table) == 0


def test_the_kinds_noted_are_fetch_error_kinds() -> None:
    """Each kind host/fetch/ gives a FetchError, and the narrowed deadline's."""
    noted = {*get_args(ErrorKind), NARROWED_DEADLINE}
    assert sorted(cases("fetch-error-kind")) == sorted(noted)
