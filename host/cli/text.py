"""How the CLI writes times, and reads times and lengths of time: one grammar for every
TIME (each `--since` and `--until`: `actors`, `workflow list`, `audit`), one for every
length of time (`--timeout`, `--grace`)."""

from __future__ import annotations

import argparse
import time
from datetime import UTC, datetime, timedelta

from wkguest.durations import to_ms

from .options import CliError

TIME_HELP = ("TIME: ms since the Unix epoch, an ISO 8601 date or time (UTC unless it gives "
             "a zone: 2026-12-01T23:50:00Z, 2026-12-01T10:00+02:00, 2026-12-01 23:50, "
             "2026-12-01), or a span back from the server's clock: 30s, 15m, 2h, 7d, "
             "\"3 days\" (one number and one unit).")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def when(ms: int) -> str:
    """A host-clock time (ms since the Unix epoch) as UTC text, to the millisecond."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(ms / 1000)) + f".{ms % 1000:03d}Z"


def seconds_arg(text: str) -> float:
    """An option's length of time in seconds: a bare number is seconds (as these options
    always took), anything else a duration as the guest SDK takes it ("90s", "5 minutes",
    "2h", "1 day"; wkguest/durations.py), so the CLI and the SDK read the same strings."""
    if _is_number(text):
        return float(text)  # nan and negatives: each option's own check names it
    try:
        return to_ms(text, repr(text)) / 1000
    except (TypeError, ValueError):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a length of time: give seconds (60) or one number and one "
            "unit, such as 90s, 5m, 2h, \"10 seconds\" or \"1 day\"") from None


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def parse_time(text: str, option: str) -> int:
    """TIME (TIME_HELP) as host-clock ms. A span back is negative: the server counts it
    back from its own clock (a test's fake clock, say, is not this machine's). Raises
    CliError (bad usage, exit 2) naming `option`."""
    text = text.strip()
    if text.isdigit():
        return int(text)
    if text[:1].isdigit() and not text[-1:].isdigit():  # a span back: 90s, "2 hours"
        try:
            span = to_ms(text, option)
        except ValueError:
            span = None  # not a span: maybe a time, tried below
        if span == 0:
            raise CliError(f"{option}: {text!r} is no time back: give a span above 0")
        if span is not None:
            return -span
    try:
        t = datetime.fromisoformat(text)
    except ValueError:
        raise CliError(f"{option}: {text!r} is not a time: give 2026-12-01T23:50:00Z, "
                       "ms since the epoch, or a span back such as 2h") from None
    if t.tzinfo is None:
        t = t.replace(tzinfo=UTC)
    return (t - _EPOCH) // timedelta(milliseconds=1)
