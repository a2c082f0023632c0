"""How the CLI writes times, and reads lengths of time."""

from __future__ import annotations

import argparse
import time

from wkguest.durations import to_ms


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
