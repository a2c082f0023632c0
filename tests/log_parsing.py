"""Strict readers of the host's log lines, for the tests: logfmt as Go's logfmt and
strconv.Unquote read it, and JSON. Each refuses what a parser would choke on (a raw
control character, an unescaped quote, a key given twice), so that a test reading every
line of a log finds a line the formatter got wrong."""

from __future__ import annotations

import json
from typing import Any

_ESCAPES = {'"': '"', "\\": "\\", "n": "\n", "r": "\r", "t": "\t"}


class BadLine(ValueError):
    pass


def parse_logfmt(line: str) -> dict[str, str]:
    """The keys and values of one logfmt line, in order."""
    _no_raw_control(line)
    out: dict[str, str] = {}
    i = 0
    while i < len(line):
        eq = line.find("=", i)
        if eq <= i:
            raise BadLine(f"no key=value at {i}: {line!r}")
        key = line[i:eq]
        if any(c in key for c in ' "\\'):
            raise BadLine(f"bad key {key!r}: {line!r}")
        if line.startswith('"', eq + 1):
            value, i = _quoted(line, eq + 1)
        else:
            end = line.find(" ", eq + 1)
            i = len(line) if end < 0 else end
            value = line[eq + 1:i]
            if any(c in value for c in '"=\\'):
                raise BadLine(f"bare value {value!r} needs quoting: {line!r}")
        if key in out:
            raise BadLine(f"key {key!r} twice: {line!r}")
        out[key] = value
        if i < len(line):
            if line[i] != " " or i + 1 == len(line):
                raise BadLine(f"no single space after {key}: {line!r}")
            i += 1
    return out


def _quoted(line: str, start: int) -> tuple[str, int]:
    """The value quoted from `start` (its opening quote), and the index after it."""
    out: list[str] = []
    i = start + 1
    while i < len(line):
        ch = line[i]
        if ch == '"':
            return "".join(out), i + 1
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        nxt = line[i + 1:i + 2]
        if nxt in _ESCAPES:
            out.append(_ESCAPES[nxt])
            i += 2
        elif nxt == "u" and len(line[i + 2:i + 6]) == 4:
            out.append(chr(int(line[i + 2:i + 6], 16)))
            i += 6
        else:
            raise BadLine(f"bad escape at {i}: {line!r}")
    raise BadLine(f"unterminated quote: {line!r}")


def parse_json(line: str) -> dict[str, Any]:
    _no_raw_control(line)
    doc = json.loads(line)
    if not isinstance(doc, dict):
        raise BadLine(f"not an object: {line!r}")
    return doc


def _no_raw_control(line: str) -> None:
    bad = [c for c in line if ord(c) < 0x20 or 0xD800 <= ord(c) <= 0xDFFF]
    if bad:
        raise BadLine(f"raw {bad[0]!r} in {line[:200]!r}")
    line.encode("utf-8")  # strict: what stderr writes as UTF-8
