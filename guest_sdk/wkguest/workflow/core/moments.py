"""The durations and times that sleeps and waits take: ints of milliseconds as before, and
now durations ("10 seconds", a timedelta: wkguest.durations) and timezone-aware datetimes.

Apart from values.py because the core modules (test_wf_structure) never import datetime,
where the clock is; this module uses only its types, and the host's clock stays the one
time a workflow reads.
"""

from __future__ import annotations

import datetime

from ...durations import to_ms
from .values import check_ms

Moment = int | float | datetime.datetime  # what sleep_until takes
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def check_duration(t: object, what: str) -> int:
    """A sleep's or a wait's duration: a number of milliseconds as check_ms takes it (so
    code written for ints keeps its meaning), or any other duration. Raises TypeError or
    ValueError naming `what`."""
    if isinstance(t, (int, float)) and not isinstance(t, bool):
        return check_ms(t, what)
    if not isinstance(t, (str, datetime.timedelta)):
        raise TypeError(f"{what} must be a number of milliseconds or a duration such as "
                        f'"10 seconds", "5m" or a timedelta, not {t!r} ({type(t).__name__})')
    return to_ms(t, what)


def check_time(t: object, what: str) -> int:
    """A point in time: ms since the Unix epoch (as check_ms takes it), or a datetime
    that knows its timezone. Raises TypeError or ValueError naming `what`."""
    if not isinstance(t, datetime.datetime):
        if isinstance(t, bool) or not isinstance(t, (int, float)):
            raise TypeError(f"{what} must be a number of milliseconds since the Unix epoch "
                            f"or a datetime with a timezone, not {t!r} ({type(t).__name__})")
        return check_ms(t, what)
    if t.tzinfo is None or t.utcoffset() is None:
        raise ValueError(f"{what}: {t!r} is a naive datetime, which names no instant; "
                         "give it a timezone, e.g. datetime.now(timezone.utc) + "
                         "timedelta(days=1) or dt.replace(tzinfo=timezone.utc)")
    return check_ms((t - _EPOCH) // datetime.timedelta(milliseconds=1), what)
