"""Does a command's output match the lines a document shows beneath it?

    bindings: dict[str, str] = {}
    problem = compare(expected_lines, actual_lines, bindings)   # None when they match

What varies from run to run is compared by its shape only (`normalise`): times and
dates, durations and sizes, fuel, process ids, milliseconds since the epoch, hex hashes
of 16 digits or more. A UUID in the document stands for the one the run printed there:
the first match binds it (`bindings`: the document's UUID -> the run's), and later
commands and output use the run's (`bind`). A line `...` stands for any lines, none
included; `...` inside a line for any text. Runs of spaces are one space (a table's
columns widen with what they hold).

What a cache decided is not compared (`cache_line`): a build's `building`/`built` lines,
which a cached build replaces by `using cached ...`, and a compile's lines, which a
server that finds the compiled code cached does not print.
"""

from __future__ import annotations

import re

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_VARYING = [
    (re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:\.\d+)?Z?"), "<time>"),
    (re.compile(r"(?<![\w.])\d+(?:\.\d+)? ?(?:ms|s|µs|MB)\b"), "<amount>"),
    (re.compile(r"\bfuel [\d,]+"), "fuel <n>"),
    (re.compile(r'("(?:fuel|\w+_ms)": )\d+'), r"\1<n>"),  # the same, in JSON
    (re.compile(r"\bpid \d+"), "pid <n>"),
    (re.compile(r"\b1[5-9]\d{11}\b"), "<epoch ms>"),
    (re.compile(r"\b[0-9a-f]{16,}\b"), "<hex>"),
]
_CACHE_LINES = [
    re.compile(r"^building \S+ → \S+ …$"),
    re.compile(r"^built \S+ in [\d.]+ s \([\d.]+ MB\)$"),
    re.compile(r"^(?:wkhost: )?using cached \S+ for \S+$"),
    re.compile(r"msg=\"compil(?:ing|ed) class \S+ (?:\([\d.]+ MB\)\.\.\.|in [\d.]+ s)\""),
]
ELLIPSIS = "..."


def cache_line(line: str) -> bool:
    return any(p.search(line.strip()) for p in _CACHE_LINES)


def normalise(line: str) -> str:
    for pattern, shape in _VARYING:
        line = pattern.sub(shape, line)
    return " ".join(line.split())


def _spaces(line: str) -> str:
    return " ".join(line.split())


def bind(text: str, bindings: dict[str, str]) -> str:
    """`text` with each bound UUID of the document replaced by the run's."""
    return UUID.sub(lambda m: bindings.get(m[0], m[0]), text)


def _line_pattern(line: str, bindings: dict[str, str]) -> re.Pattern[str]:
    """A regex for one expected line: a UUID not yet bound is a named group (the same UUID
    twice, the same group), `...` any text."""
    parts: list[str] = []
    groups: dict[str, str] = {}
    pos = 0
    for m in UUID.finditer(line):
        parts.append(_literal(line[pos:m.start()]))
        uuid = m[0]
        if uuid in bindings.values():  # bound already: the run's own value, literally
            parts.append(re.escape(uuid))
        elif uuid in groups:
            parts.append(f"(?P={groups[uuid]})")
        else:
            groups[uuid] = f"u{len(groups)}"
            parts.append(f"(?P<{groups[uuid]}>{UUID.pattern})")
        pos = m.end()
    parts.append(_literal(line[pos:]))
    return re.compile("".join(parts))


def _literal(text: str) -> str:
    return ".*".join(re.escape(piece) for piece in text.split(ELLIPSIS))


def match_line(expected: str, actual: str, bindings: dict[str, str]) -> dict[str, str] | None:
    """The new bindings if `actual` matches `expected` (an empty dict: matched, nothing
    new), else None."""
    # By shape first; then as printed, for a `...` that covers part of a shape ("3 ms").
    for shape in (normalise, _spaces):
        line = shape(bind(expected, bindings))
        m = _line_pattern(line, bindings).fullmatch(shape(actual))
        if m is not None:
            break
    else:
        return None
    unbound = [u for u in dict.fromkeys(UUID.findall(line)) if u not in bindings.values()]
    return {u: m[f"u{k}"] for k, u in enumerate(unbound)}


def match_lines(expected: list[str], actual: list[str],
                bindings: dict[str, str]) -> dict[str, str] | None:
    """The new bindings if all of `actual` matches all of `expected`, else None."""
    if not expected:
        return {} if not actual else None
    head, rest = expected[0], expected[1:]
    if head.strip() == ELLIPSIS:
        for skip in range(len(actual) + 1):
            found = match_lines(rest, actual[skip:], bindings)
            if found is not None:
                return found
        return None
    if not actual:
        return None
    new = match_line(head, actual[0], bindings)
    if new is None:
        return None
    more = match_lines(rest, actual[1:], {**bindings, **new})
    return None if more is None else {**new, **more}


def compare(expected: list[str], actual: list[str], bindings: dict[str, str]) -> str | None:
    """None if they match (and `bindings` takes what they bound), else what differs."""
    want = [line for line in expected if not cache_line(line)]
    got = [line for line in actual if not cache_line(line)]
    new = match_lines(want, got, bindings)
    if new is not None:
        bindings.update(new)
        return None
    shown = "\n".join(f"  | {line}" for line in want) or "  (nothing)"
    printed = "\n".join(f"  | {line}" for line in got) or "  (nothing)"
    return f"the document shows:\n{shown}\nthe run printed:\n{printed}"
