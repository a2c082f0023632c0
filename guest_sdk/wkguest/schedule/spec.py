"""A schedule's definition: what it starts, when, and its policies, checked.

    spec = Spec.from_message({"target": "reports", "cron": "0 3 * * *", "input": {...},
                              "overlap": "skip", "catchup": "one"})

- target: the workflow class it starts instances of.
- cron, tz: when (cron.py: five fields; UTC, or a fixed offset).
- input: the value each instance starts with (JSON).
- overlap: "skip" (no new start while the last instance this schedule started is
  unfinished: running, waiting, compensating, parked or paused), or "allow".
- catchup: what a fire does with the fire times it finds already past by more than
  `grace_ms` (the host was down, say): "none" starts none of them, "one" the newest of
  them, "all" up to `catchup_max` of them, the newest. A fire time less than
  `grace_ms` past is on time and always starts.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from typing import Any

from .cron import Cron, CronError

__all__ = ["CATCHUPS", "OVERLAPS", "Spec", "SpecError"]

OVERLAPS = ("skip", "allow")
CATCHUPS = ("none", "one", "all")
DEFAULT_CATCHUP_MAX = 10
MAX_CATCHUP_MAX = 1000
DEFAULT_GRACE_MS = 60_000
MAX_INPUT_BYTES = 64 * 1024
_CLASS = re.compile(r"^[a-z][a-z0-9_-]{0,62}$")  # as the host names classes


class SpecError(ValueError):
    """A create message that cannot make a schedule; the message names the field."""


@dataclass(frozen=True)
class Spec:
    """A schedule's definition, as create gives it (`from_message` checks each field):
    the workflow class it starts, when, with what input, and what overlaps and missed
    fire times do."""

    target: str
    cron: str
    tz: str = "UTC"
    input: Any = None
    overlap: str = "skip"
    catchup: str = "one"
    catchup_max: int = DEFAULT_CATCHUP_MAX
    grace_ms: int = DEFAULT_GRACE_MS

    @classmethod
    def from_message(cls, msg: Any) -> Spec:
        """Raises SpecError naming the field that is wrong."""
        if not isinstance(msg, dict):
            raise SpecError("the body must be a JSON object")
        unknown = sorted(set(msg) - set(cls.__dataclass_fields__))
        if unknown:
            raise SpecError(f"unknown field(s): {', '.join(unknown)}")
        target = msg.get("target")
        if not isinstance(target, str) or not _CLASS.match(target):
            raise SpecError(f"target {target!r}: a class name (1-63 of a-z, 0-9, '_', "
                            "'-', starting with a letter)")
        spec = cls(target=target, cron=_text(msg, "cron"), tz=_text(msg, "tz", "UTC"),
                   input=msg.get("input"),
                   overlap=_choice(msg, "overlap", OVERLAPS, "skip"),
                   catchup=_choice(msg, "catchup", CATCHUPS, "one"),
                   catchup_max=_int(msg, "catchup_max", DEFAULT_CATCHUP_MAX, 1,
                                    MAX_CATCHUP_MAX),
                   grace_ms=_int(msg, "grace_ms", DEFAULT_GRACE_MS, 0, 86_400_000))
        if len(json.dumps(spec.input).encode()) > MAX_INPUT_BYTES:
            raise SpecError(f"input: more than {MAX_INPUT_BYTES} bytes of JSON")
        spec.parsed()  # raises for a bad spec or zone
        return spec

    def parsed(self) -> Cron:
        try:
            return Cron.parse(self.cron, self.tz)
        except CronError as e:
            raise SpecError(str(e)) from None

    def to_map(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def starts_missed(self) -> int:
        """How many fire times already past by more than grace_ms one fire starts."""
        return {"none": 0, "one": 1}.get(self.catchup, self.catchup_max)


def _text(msg: dict[str, Any], key: str, default: str | None = None) -> str:
    v = msg.get(key, default)
    if not isinstance(v, str) or not v.strip():
        raise SpecError(f"{key}: a non-empty text is needed, got {v!r}")
    return v.strip()


def _choice(msg: dict[str, Any], key: str, choices: tuple[str, ...], default: str) -> str:
    v = msg.get(key, default)
    if v not in choices:
        raise SpecError(f"{key} {v!r}: one of {', '.join(choices)}")
    return str(v)


def _int(msg: dict[str, Any], key: str, default: int, lo: int, hi: int) -> int:
    v = msg.get(key, default)
    if not isinstance(v, int) or isinstance(v, bool) or not lo <= v <= hi:
        raise SpecError(f"{key} {v!r}: a whole number from {lo} to {hi}")
    return v
