"""Cron specs: five fields (minute, hour, day of month, month, day of week), matched in
UTC or at a fixed offset from it.

    cron = Cron.parse("*/15 9-17 * * mon-fri", tz="+01:00")
    cron.next_after(now_ms)      # the first fire time after now (ms, UTC), or None
    cron.latest_at(now_ms)       # the last fire time at or before now, or None

Each field takes `*`, a number, a range `a-b`, a step `*/n` or `a-b/n`, and lists of
those (`1,15,30-40/5`); months and days of the week take names too (jan, mon), and a
day of the week 7 is Sunday, as 0. When both day fields are restricted, a day matching
either fires (as every cron does). `@hourly`, `@daily`, `@weekly`, `@monthly` and
`@yearly` stand for their specs.

Time zones: a component built by componentize-py carries no tz database, so only fixed
offsets are taken ("UTC", "Z", "+05:30", "-08:00"). A fixed offset has no daylight
saving: "0 9 * * *" at +01:00 fires at 08:00 UTC all year round, also while the place
it stands for keeps summer time. A named zone (Europe/Paris) is refused, saying so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

__all__ = ["Cron", "CronError", "parse_offset"]

_FIELDS = (("minute", 0, 59), ("hour", 0, 23), ("day of month", 1, 31), ("month", 1, 12),
           ("day of week", 0, 7))
_MONTHS = {m: i + 1 for i, m in enumerate(
    ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"])}
_DAYS = {d: i for i, d in enumerate(["sun", "mon", "tue", "wed", "thu", "fri", "sat"])}
_MACROS = {"@hourly": "0 * * * *", "@daily": "0 0 * * *", "@midnight": "0 0 * * *",
           "@weekly": "0 0 * * 0", "@monthly": "0 0 1 * *", "@yearly": "0 0 1 1 *",
           "@annually": "0 0 1 1 *"}
_OFFSET = re.compile(r"^(?:UTC)?([+-])(\d{1,2})(?::?(\d{2}))?$")
_EPOCH = datetime(1970, 1, 1)
_MINUTE = timedelta(minutes=1)
# How far to look for a match: a spec such as "0 0 29 2 1" (29 February, or any Monday)
# always matches soon, but "0 0 30 2 *" never does; 8 years cover every leap day.
_YEARS = 8


class CronError(ValueError):
    """A spec or time zone that cannot be used; the message names the field."""


@dataclass(frozen=True)
class Cron:
    """A parsed cron expression (`parse`): the minutes, hours, days, months and weekdays
    it fires at, in the time zone whose offset it holds."""

    text: str
    minutes: tuple[int, ...]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]
    any_day: bool       # the day-of-month field is `*`
    any_weekday: bool   # the day-of-week field is `*`
    offset_min: int     # local time = UTC + this

    @classmethod
    def parse(cls, text: str, tz: str = "UTC") -> Cron:
        """Raises CronError naming the field that is wrong."""
        if not isinstance(text, str) or not text.strip():
            raise CronError("the cron spec is empty: give five fields, e.g. '0 3 * * *'")
        spec = _MACROS.get(text.strip().lower(), text)
        parts = spec.split()
        if len(parts) != 5:
            raise CronError(f"cron spec {text!r}: {len(parts)} fields, not 5 (minute hour "
                            "day-of-month month day-of-week)")
        sets = [_field(p, name, lo, hi) for p, (name, lo, hi) in zip(parts, _FIELDS,
                                                                     strict=True)]
        weekdays = frozenset(d % 7 for d in sets[4])
        return cls(text.strip(), tuple(sorted(sets[0])), frozenset(sets[1]),
                   frozenset(sets[2]), frozenset(sets[3]), weekdays,
                   parts[2].startswith("*"), parts[4].startswith("*"), parse_offset(tz))

    def day_matches(self, d: datetime) -> bool:
        dom = d.day in self.days
        dow = (d.weekday() + 1) % 7 in self.weekdays  # Python's Monday is 0; cron's Sunday
        if self.any_day or self.any_weekday:
            return dom and dow
        return dom or dow

    def next_after(self, t_ms: int) -> int | None:
        """The first fire time strictly after `t_ms` (ms since the epoch, UTC), or None
        if the spec never fires (30 February)."""
        d = self._local(t_ms) + _MINUTE
        limit = d.year + _YEARS
        while d.year <= limit:
            if d.month not in self.months:
                d = _first_of_next_month(d)
            elif not self.day_matches(d):
                d = d.replace(hour=0, minute=0) + timedelta(days=1)
            elif d.hour not in self.hours:
                d = d.replace(minute=0) + timedelta(hours=1)
            else:
                later = [m for m in self.minutes if m >= d.minute]
                if later:
                    return self._utc_ms(d.replace(minute=later[0]))
                d = d.replace(minute=0) + timedelta(hours=1)
        return None

    def latest_at(self, t_ms: int) -> int | None:
        """The last fire time at or before `t_ms`, or None if none is in 8 years."""
        d = self._local(t_ms)
        limit = d.year - _YEARS
        while d.year >= limit:
            if d.month not in self.months:
                d = d.replace(day=1, hour=0, minute=0) - _MINUTE
            elif not self.day_matches(d):
                d = d.replace(hour=0, minute=0) - _MINUTE
            elif d.hour not in self.hours:
                d = d.replace(minute=0) - _MINUTE
            else:
                earlier = [m for m in self.minutes if m <= d.minute]
                if earlier:
                    return self._utc_ms(d.replace(minute=earlier[-1]))
                d = d.replace(minute=0) - _MINUTE
        return None

    def _local(self, t_ms: int) -> datetime:
        """`t_ms` as local time (naive), down to its minute."""
        return _EPOCH + timedelta(minutes=t_ms // 60_000 + self.offset_min)

    def _utc_ms(self, local: datetime) -> int:
        return ((local - _EPOCH) // _MINUTE - self.offset_min) * 60_000


def _first_of_next_month(d: datetime) -> datetime:
    year, month = (d.year + 1, 1) if d.month == 12 else (d.year, d.month + 1)
    return datetime(year, month, 1)


def _field(text: str, name: str, lo: int, hi: int) -> set[int]:
    out: set[int] = set()
    for item in text.split(","):
        out |= _item(item, text, name, lo, hi)
    return out


def _item(item: str, text: str, name: str, lo: int, hi: int) -> set[int]:
    where = f"the {name} field {text!r}"
    body, slash, step_text = item.partition("/")
    step = _number(step_text, where) if slash else 1
    if step < 1:
        raise CronError(f"{where}: a step must be 1 or more")
    top = 6 if name == "day of week" else hi  # 7 is Sunday again: not twice
    if body == "*":
        first, last = lo, top
    elif "-" in body:
        a, _, b = body.partition("-")
        first, last = _value(a, name, where), _value(b, name, where)
    else:
        first = _value(body, name, where)
        last = top if slash else first  # "5/15": from 5, every 15
    for v in (first, last):
        if not lo <= v <= hi:
            raise CronError(f"{where}: {v} is out of range ({lo}-{hi})")
    if first > last:
        raise CronError(f"{where}: the range {first}-{last} runs backwards")
    return set(range(first, last + 1, step))


def _value(text: str, name: str, where: str) -> int:
    names = _MONTHS if name == "month" else _DAYS if name == "day of week" else {}
    got = names.get(text.lower())
    return got if got is not None else _number(text, where)


def _number(text: str, where: str) -> int:
    if not text.isdigit():
        raise CronError(f"{where}: {text!r} is not a number")
    return int(text)


def parse_offset(tz: str) -> int:
    """A fixed offset from UTC, in minutes: "UTC", "Z", "+05:30", "-0800", "UTC+1".
    Raises CronError, naming why a named zone is not taken."""
    if not isinstance(tz, str):
        raise CronError("the time zone must be a text such as UTC or +01:00")
    text = tz.strip()
    if text.upper() in ("UTC", "Z", "GMT", "+00:00", "-00:00", ""):
        return 0
    m = _OFFSET.match(text.upper())
    if m is None:
        raise CronError(
            f"time zone {tz!r}: only UTC or a fixed offset such as +01:00 or -05:30 is "
            "taken. A component has no tz database to follow a named zone's rules, so a "
            "fixed offset is what it keeps: it does not follow daylight saving")
    hours, minutes = int(m.group(2)), int(m.group(3) or 0)
    if hours > 14 or minutes > 59 or hours * 60 + minutes > 14 * 60:
        raise CronError(f"time zone {tz!r}: an offset is at most 14:00 either way")
    return (hours * 60 + minutes) * (1 if m.group(1) == "+" else -1)
