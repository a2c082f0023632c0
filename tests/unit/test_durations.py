"""wkguest.durations: parsing "10 seconds" / "5m" / ints / timedeltas, refusing the rest."""

from __future__ import annotations

import datetime

import pytest
from wkguest.durations import MAX_MS, format_ms, to_ms

SECOND, MINUTE, HOUR, DAY = 1000, 60_000, 3_600_000, 86_400_000

GOOD: list[tuple[object, int]] = [
    (0, 0),
    (250, 250),
    (2.0, 2),
    (datetime.timedelta(0), 0),
    (datetime.timedelta(seconds=1.5), 1500),
    (datetime.timedelta(days=2), 2 * DAY),
    ("10 seconds", 10 * SECOND),
    ("1 second", SECOND),
    ("10s", 10 * SECOND),
    ("  10 Seconds  ", 10 * SECOND),
    ("10SECONDS", 10 * SECOND),
    ("250ms", 250),
    ("1 millisecond", 1),
    ("3 milliseconds", 3),
    ("5 minutes", 5 * MINUTE),
    ("5m", 5 * MINUTE),
    ("1.5 minutes", 90 * SECOND),
    ("2 hours", 2 * HOUR),
    ("2h", 2 * HOUR),
    ("1 day", DAY),
    ("1d", DAY),
    ("2 weeks", 14 * DAY),
    ("1w", 7 * DAY),
    ("1 month", 30 * DAY),
    ("2 years", 730 * DAY),
    ("100 years", MAX_MS),
    ("0s", 0),
    ("0.5s", 500),
]


@pytest.mark.parametrize(("value", "ms"), GOOD, ids=[repr(v) for v, _ in GOOD])
def test_parses(value: object, ms: int) -> None:
    assert to_ms(value, "the delay") == ms


BAD_TEXT: list[tuple[str, str]] = [
    ("", "is not a duration"),
    (" ", "is not a duration"),
    ("-1s", "must not be negative"),
    ("1e3s", "is not a duration"),
    ("nan", "is not a duration"),
    ("inf", "is not a duration"),
    ("+5s", "is not a duration"),
    ("10 parsecs", "unknown unit 'parsecs'"),
    ("10 secs", "unknown unit 'secs'"),
    ("1h30m", '"90 minutes"'),
    ("1 hour 30 minutes", "one unit"),
    ("10", "has no unit"),
    ("1.5", "has no unit"),
    ("0.0005s", "whole number of milliseconds"),
    ("101 years", "longer than 100 years"),
    ("9" * 40 + " days", "longer than 100 years"),
    ("s", "is not a duration"),
    (".5s", "is not a duration"),
]


@pytest.mark.parametrize(("text", "says"), BAD_TEXT, ids=[repr(t) for t, _ in BAD_TEXT])
def test_bad_text_is_a_value_error_naming_the_argument(text: str, says: str) -> None:
    with pytest.raises(ValueError) as caught:
        to_ms(text, "the delay")
    message = str(caught.value)
    assert "the delay" in message
    assert says in message


BAD_NUMBERS: list[tuple[object, str]] = [
    (-1, "must not be negative"),
    (float("inf"), "finite"),
    (float("-inf"), "finite"),
    (float("nan"), "finite"),
    (1.5, "whole number of milliseconds"),
    (10**30, "longer than 100 years"),
    (1e300, "longer than 100 years"),
    (MAX_MS + 1, "longer than 100 years"),
    (datetime.timedelta(-1), "must not be negative"),
    (datetime.timedelta(microseconds=1), "whole number of milliseconds"),
]


@pytest.mark.parametrize(("value", "says"), BAD_NUMBERS, ids=[repr(v) for v, _ in BAD_NUMBERS])
def test_bad_numbers_are_value_errors(value: object, says: str) -> None:
    with pytest.raises(ValueError, match="the timeout") as caught:
        to_ms(value, "the timeout")
    assert says in str(caught.value)


WRONG_TYPES: list[object] = [
    None, True, False, b"10s", [10], {"ms": 10}, datetime.datetime(2026, 1, 1),
]


@pytest.mark.parametrize("value", WRONG_TYPES, ids=[repr(v) for v in WRONG_TYPES])
def test_wrong_types_are_type_errors_with_examples(value: object) -> None:
    with pytest.raises(TypeError) as caught:
        to_ms(value, "sleep's duration")
    message = str(caught.value)
    assert "sleep's duration" in message
    assert '"10 seconds"' in message and "int of milliseconds" in message


FORMATS: list[tuple[int, str]] = [
    (0, "0 ms"),
    (1, "1 ms"),
    (250, "250 ms"),
    (1234, "1234 ms"),
    (SECOND, "1 second"),
    (1500, "1.5 seconds"),
    (10 * SECOND, "10 seconds"),
    (90 * SECOND, "1.5 minutes"),
    (5 * MINUTE, "5 minutes"),
    (HOUR, "1 hour"),
    (90 * MINUTE, "1.5 hours"),
    (DAY, "1 day"),
    (7 * DAY, "1 week"),
    (10 * DAY, "10 days"),
]


@pytest.mark.parametrize(("ms", "text"), FORMATS, ids=[str(ms) for ms, _ in FORMATS])
def test_format_is_short_and_parses_back(ms: int, text: str) -> None:
    assert format_ms(ms) == text
    assert to_ms(text, "x") == ms
