"""Durations as people write them: an int of milliseconds, a `timedelta`, or a string such
as "10 seconds", "5 minutes", "2 hours", "1 day" (Cloudflare Workflows' labels, plus
"millisecond") or the short forms "10s", "5m", "2h", "1d".

Plain Python with no bindings import, so the host CLI can parse the same strings the guest
SDK does. Everything is exact: "1.5 minutes" is 90000 ms by rational arithmetic, and a value
that is not a whole number of milliseconds is refused rather than rounded.
"""

from __future__ import annotations

import datetime
import math
import re
from fractions import Fraction

__all__ = ["Duration", "EXAMPLES", "MAX_MS", "format_ms", "to_ms"]

Duration = int | float | str | datetime.timedelta

_SECOND = 1000
_MINUTE = 60 * _SECOND
_HOUR = 60 * _MINUTE
_DAY = 24 * _HOUR
_WEEK = 7 * _DAY

# A month and a year are fixed lengths, as Cloudflare's are: a duration is a length of time,
# not a calendar step (use sleep_until for "the first of next month").
_UNITS: dict[str, int] = {}
for _names, _ms in (
    (("ms", "millisecond", "milliseconds"), 1),
    (("s", "second", "seconds"), _SECOND),
    (("m", "minute", "minutes"), _MINUTE),
    (("h", "hour", "hours"), _HOUR),
    (("d", "day", "days"), _DAY),
    (("w", "week", "weeks"), _WEEK),
    (("month", "months"), 30 * _DAY),
    (("year", "years"), 365 * _DAY),
):
    for _name in _names:
        _UNITS[_name] = _ms

MAX_MS = 100 * 365 * _DAY
"""The longest duration taken: 100 years. Longer is surely a slip (ms given as seconds)."""

EXAMPLES = (
    '"10 seconds", "5 minutes", "2 hours", "1 day" (or 10s, 5m, 2h, 1d), or an int of milliseconds'
)

_TEXT = re.compile(r"(\d+(?:\.\d+)?)\s*([a-z]+)")
_PAIR = re.compile(r"(\d+(?:\.\d+)?)\s*([a-z]+)\s*")


def to_ms(value: object, what: str) -> int:
    """`value` as a whole number of milliseconds, 0 to 100 years. `what` names the argument
    in errors (e.g. "sleep's duration"). Raises TypeError for a value that is not a
    duration at all, ValueError for a bad one (negative, text that does not parse, a
    fraction of a millisecond, over 100 years)."""
    if isinstance(value, str):
        return _checked(_parse(value, what), value, what)
    if isinstance(value, bool) or not isinstance(value, (int, float, datetime.timedelta)):
        got = f"{type(value).__name__} {value!r}"
        raise TypeError(f"{what} takes a duration: {EXAMPLES}; got {got}")
    if isinstance(value, datetime.timedelta):
        whole_seconds = value.days * 86_400 + value.seconds
        exact = Fraction(whole_seconds * 1000) + Fraction(value.microseconds, 1000)
        return _checked(exact, value, what)
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{what} must be a finite duration, got {value!r}; use {EXAMPLES}")
    return _checked(Fraction(value), value, what)


def _parse(text: str, what: str) -> Fraction:
    cleaned = text.strip().lower()
    match = _TEXT.fullmatch(cleaned)
    if match is not None and match.group(2) in _UNITS:
        return Fraction(match.group(1)) * _UNITS[match.group(2)]
    if match is not None:
        raise ValueError(
            f"{what}: {text!r} has an unknown unit {match.group(2)!r}; the units are ms, "
            f"s, m, h, d, w and millisecond, second, minute, hour, day, week, month, year "
            f"(singular or plural), e.g. {EXAMPLES}"
        )
    if cleaned.startswith("-") and _TEXT.fullmatch(cleaned[1:].lstrip()):
        raise ValueError(f"{what} must not be negative, got {text!r}; use {EXAMPLES}")
    if _compound(cleaned):
        raise ValueError(
            f"{what}: {text!r} mixes units; write one number and one unit, "
            f'e.g. "90 minutes" rather than "1h30m"'
        )
    if re.fullmatch(r"\d+(?:\.\d+)?", cleaned):
        raise ValueError(
            f"{what}: {text!r} has no unit; write e.g. \"{cleaned} ms\" or \"{cleaned} "
            "seconds\" (a number without a unit must be a number of milliseconds: an int, "
            "not a str)"
        )
    raise ValueError(f"{what}: {text!r} is not a duration; write a number and a unit: {EXAMPLES}")


def _compound(text: str) -> bool:
    """Whether `text` is two or more number-unit pairs, "1h30m" or "1 hour 30 minutes"."""
    pairs = list(_PAIR.finditer(text))
    whole = "".join(pair.group(0) for pair in pairs) == text
    return whole and len(pairs) >= 2 and all(pair.group(2) in _UNITS for pair in pairs)


def _checked(exact: Fraction, value: object, what: str) -> int:
    if exact < 0:
        raise ValueError(f"{what} must not be negative, got {value!r}; use {EXAMPLES}")
    if exact.denominator != 1:
        raise ValueError(f"{what}: {value!r} is not a whole number of milliseconds")
    if exact > MAX_MS:
        raise ValueError(f"{what}: {value!r} is longer than 100 years, the most a duration may be")
    return int(exact)


_LABELS = (
    (_WEEK, "week"), (_DAY, "day"), (_HOUR, "hour"), (_MINUTE, "minute"), (_SECOND, "second"),
)


def format_ms(ms: int) -> str:
    """`ms` in the largest unit that shows it in at most one decimal: "10 seconds",
    "1.5 minutes", "250 ms". The text parses back to the same value with to_ms."""
    if ms < 0:
        return "-" + format_ms(-ms)
    for size, label in _LABELS:
        if ms >= size and (ms * 10) % size == 0:
            tenths = ms * 10 // size
            number = str(tenths // 10) if tenths % 10 == 0 else f"{tenths // 10}.{tenths % 10}"
            return f"{number} {label}" + ("" if number == "1" else "s")
    return f"{ms} ms"
