"""The guest's output of one event, into the host's log (`wkhost.guest.<class>`).

One record a line, but a Python traceback is one record (its lines joined, chained
exceptions with it), and the lines componentize-py's runtime writes as it traps on an
uncaught exception (its panic: "thread '<unnamed>' panicked at runtime/src/lib.rs...",
its message, "note: run with `RUST_BACKTRACE=1`...") are dropped: the traceback above
them, and the trap's own line, say what they say.
"""

from __future__ import annotations

import logging
import re

from ..logs import actor
from .actor_slot import ActorSlot
from .event import Event

_TRACEBACK = "Traceback (most recent call last):"
# Lines between two tracebacks of one chain (Python's words), and the blank around them.
_CHAINED = ("During handling of the above exception, another exception occurred:",
            "The above exception was the direct cause of the following exception:")
_PANIC = re.compile(r"thread '[^']*'( \(\d+\))? panicked at runtime/src/lib\.rs:\d+:\d+:$")
_PANIC_END = "note: run with `RUST_BACKTRACE=1`"


def flush_output(slot: ActorSlot, ev: Event, cap: int) -> None:
    """Log what the guest wrote in the event (see the module's doc), and what was dropped
    past `cap` (the config's max_guest_output_bytes)."""
    text, dropped, flooded = slot.output.take()
    if not text and not dropped:
        return
    guest_log = logging.getLogger(f"wkhost.guest.{slot.ref.cls}")
    # After a trap, the guest's output is its traceback: why, in its own words.
    level = logging.INFO if ev.trapped is None else logging.WARNING
    fields = actor(slot.ref, event=ev.kind)  # one for every record of the event's
    for record in records(text):
        guest_log.log(level, "[%s] %s", slot.ref, record, extra=fields)
    if dropped:
        guest_log.warning("[%s] %d more bytes of output dropped (cap %d per event)%s",
                          slot.ref, dropped, cap, "; writes past it fail" if flooded else "",
                          extra=fields)


def records(text: str) -> list[str]:
    """The log records of a guest's output: a line each, a traceback whole, the
    runtime's panic gone."""
    out: list[str] = []
    lines = text.rstrip("\n").splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if _PANIC.match(line):
            i = _past_panic(lines, i)
            continue
        if line == _TRACEBACK:
            end = _traceback_end(lines, i)
            out.append("\n".join(lines[i:end]))
            i = end
            continue
        if line.strip() or not _blank_before_panic(lines, i):
            out.append(line)
        i += 1
    return out


def _past_panic(lines: list[str], i: int) -> int:
    """The index past the runtime's panic that starts at `i`: through its note, or only
    its first line if no note follows within a few lines."""
    for j in range(i + 1, min(i + 6, len(lines))):
        if lines[j].startswith(_PANIC_END):
            return j + 1
    return i + 1


def _blank_before_panic(lines: list[str], i: int) -> bool:
    return i + 1 < len(lines) and bool(_PANIC.match(lines[i + 1]))


def _traceback_end(lines: list[str], start: int) -> int:
    """The index past the traceback that starts at `start`: its frames (indented lines),
    the exception's line (the first that is not), and any chained traceback after it."""
    i = start + 1
    while i < len(lines) and lines[i][:1] in (" ", "\t"):
        i += 1
    end = min(i + 1, len(lines))  # the exception's line
    # A chain: blank, Python's words, blank, and the next traceback.
    if lines[end:end + 3] and _is_chain(lines[end:end + 4]):
        return _traceback_end(lines, end + 3)
    return end


def _is_chain(window: list[str]) -> bool:
    return (len(window) == 4 and not window[0].strip() and window[1] in _CHAINED
            and not window[2].strip() and window[3] == _TRACEBACK)
