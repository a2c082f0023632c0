"""Cron specs: the five fields, their errors, the next and the latest fire time, and
fixed offsets (no named zones: the guest has no tz database)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from wkguest.schedule.cron import Cron, CronError, parse_offset


def ms(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp() * 1000)


def iso(t: int | None) -> str | None:
    if t is None:
        return None
    return datetime.fromtimestamp(t / 1000, UTC).strftime("%Y-%m-%d %H:%M %a")


def nexts(spec: str, start: str, n: int = 3, tz: str = "UTC") -> list[str | None]:
    cron, t = Cron.parse(spec, tz), ms(start)
    out: list[str | None] = []
    for _ in range(n):
        got = cron.next_after(t)
        out.append(iso(got))
        if got is None:
            break
        t = got
    return out


def test_every_ten_minutes_starts_after_the_time_given() -> None:
    assert nexts("*/10 * * * *", "2026-01-01 00:00") == [
        "2026-01-01 00:10 Thu", "2026-01-01 00:20 Thu", "2026-01-01 00:30 Thu"]
    assert nexts("*/10 * * * *", "2026-01-01 00:09:59") == [
        "2026-01-01 00:10 Thu", "2026-01-01 00:20 Thu", "2026-01-01 00:30 Thu"]


def test_ranges_lists_steps_and_names() -> None:
    assert nexts("15,45 9-10 * * mon-fri", "2026-01-02 10:50", 4) == [
        "2026-01-05 09:15 Mon", "2026-01-05 09:45 Mon", "2026-01-05 10:15 Mon",
        "2026-01-05 10:45 Mon"]
    assert nexts("0 0 1 jan,jul *", "2026-01-01 00:00", 2) == [
        "2026-07-01 00:00 Wed", "2027-01-01 00:00 Fri"]
    assert nexts("5/20 0 * * *", "2026-01-01 00:00") == [
        "2026-01-01 00:05 Thu", "2026-01-01 00:25 Thu", "2026-01-01 00:45 Thu"]


def test_day_of_month_or_day_of_week_when_both_are_restricted() -> None:
    # The 13th, or any Friday: as every cron does.
    assert nexts("0 12 13 * fri", "2026-02-01 00:00", 3) == [
        "2026-02-06 12:00 Fri", "2026-02-13 12:00 Fri", "2026-02-20 12:00 Fri"]
    assert nexts("0 12 13 * 5", "2026-03-10 00:00", 2) == [
        "2026-03-13 12:00 Fri", "2026-03-20 12:00 Fri"]
    assert nexts("0 0 * * 7", "2026-01-01 00:00", 1) == ["2026-01-04 00:00 Sun"]


def test_macros_and_leap_days_and_a_spec_that_never_fires() -> None:
    assert nexts("@daily", "2026-01-01 00:00", 1) == ["2026-01-02 00:00 Fri"]
    assert nexts("@hourly", "2026-01-01 00:30", 1) == ["2026-01-01 01:00 Thu"]
    assert nexts("0 0 29 2 *", "2026-01-01 00:00", 2) == [
        "2028-02-29 00:00 Tue", "2032-02-29 00:00 Sun"]
    assert nexts("0 0 30 2 *", "2026-01-01 00:00") == [None]
    assert Cron.parse("0 0 30 2 *").latest_at(ms("2026-01-01 00:00")) is None


def test_latest_at_is_the_last_fire_at_or_before() -> None:
    cron = Cron.parse("*/10 * * * *")
    assert iso(cron.latest_at(ms("2026-01-01 00:20"))) == "2026-01-01 00:20 Thu"
    assert iso(cron.latest_at(ms("2026-01-01 00:29:59"))) == "2026-01-01 00:20 Thu"
    assert iso(cron.latest_at(ms("2026-01-01 00:20") - 1)) == "2026-01-01 00:10 Thu"
    monthly = Cron.parse("30 6 1 * *")
    assert iso(monthly.latest_at(ms("2026-03-01 06:29"))) == "2026-02-01 06:30 Sun"
    weekly = Cron.parse("0 9 * * mon")
    assert iso(weekly.latest_at(ms("2026-01-05 08:59"))) == "2025-12-29 09:00 Mon"


def test_a_fixed_offset_has_no_daylight_saving() -> None:
    # 09:00 at +01:00 is 08:00 UTC in January and in July alike.
    assert nexts("0 9 * * *", "2026-01-01 00:00", 1, tz="+01:00") == ["2026-01-01 08:00 Thu"]
    assert nexts("0 9 * * *", "2026-07-01 00:00", 1, tz="+01:00") == ["2026-07-01 08:00 Wed"]
    # A day boundary in local time: midnight at -05:30 is 05:30 UTC.
    assert nexts("0 0 * * *", "2026-01-01 00:00", 1, tz="-05:30") == ["2026-01-01 05:30 Thu"]
    assert iso(Cron.parse("0 0 * * *", "-05:30").latest_at(ms("2026-01-01 05:29"))) == \
        "2025-12-31 05:30 Wed"


@pytest.mark.parametrize(("tz", "minutes"), [("UTC", 0), ("Z", 0), ("+01:00", 60),
                                               ("-0800", -480), ("UTC+5:30", 330),
                                               ("+14", 840)])
def test_offsets(tz: str, minutes: int) -> None:
    assert parse_offset(tz) == minutes


def test_a_named_zone_is_refused_saying_why() -> None:
    with pytest.raises(CronError, match="no tz database.*does not follow daylight saving"):
        parse_offset("Europe/Paris")
    with pytest.raises(CronError, match="at most 14:00"):
        parse_offset("+15:00")


@pytest.mark.parametrize(("spec", "message"), [
    ("", "empty"),
    ("* * * *", "4 fields, not 5"),
    ("60 * * * *", "the minute field '60': 60 is out of range"),
    ("* 24 * * *", "the hour field '24': 24 is out of range"),
    ("* * 0 * *", "the day of month field '0': 0 is out of range"),
    ("* * * 13 *", "the month field '13'"),
    ("* * * * 8", "the day of week field '8'"),
    ("*/0 * * * *", "a step must be 1 or more"),
    ("10-5 * * * *", "runs backwards"),
    ("x * * * *", "'x' is not a number"),
    ("* * * foo *", "the month field 'foo': 'foo' is not a number"),
])
def test_a_bad_spec_names_its_field(spec: str, message: str) -> None:
    with pytest.raises(CronError, match=message.replace("*", r"\*")):
        Cron.parse(spec)
