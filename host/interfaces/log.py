"""The `log` interface: a guest's records in the host's log, with fields.

The guest controls every string, so each is bounded here (the WIT's words), a field
cannot pass for one of the host's (class, id, event), the format's or logging's own
(such a name gets a trailing '_'), and a record's
size comes out of its event's output cap (events/actor_slot.py's GuestOutput), shared
with what it writes to stdout and stderr: a guest that logs in a loop floods its own
event's budget, not the host's log.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from ..logs import RESERVED_FIELDS, actor
from .ports import E, Lifecycle

MAX_MESSAGE = 4096
MAX_VALUE = 1024
MAX_FIELDS = 32
MAX_NAME = 64
_UNSAFE = re.compile(r"[^A-Za-z0-9_]")
_UNSAFE_DOTTED = re.compile(r"[^A-Za-z0-9_.]")
_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING,
           "error": logging.ERROR}


def register(root: Any, guard: Any, host: Lifecycle[E]) -> None:
    current, cap = host.current_event, host.output_cap

    def write(_store: Any, level: Any, message: str, fields: list[tuple[str, str]]) -> None:
        ev = current()
        kept = bounded_fields(fields)
        text = message[:MAX_MESSAGE]
        size = len(text) + sum(len(k) + len(v) for k, v in kept.items())
        if not ev.slot.output.charge(size, cap):
            return  # counted as dropped: the event's output line says how much
        ref = ev.slot.ref
        logging.getLogger(f"wkhost.guest.{ref.cls}").log(
            _level(level), "[%s] %s", ref, text, extra={**actor(ref, event=ev.kind), **kept})

    with root.add_instance("wk:host/log@0.1.0") as iface:
        iface.add_func("write", guard(write))


def bounded_fields(fields: list[tuple[str, str]], dotted: bool = False) -> dict[str, str]:
    """The first MAX_FIELDS fields, each name made safe and not one of the host's, each
    value cut at MAX_VALUE characters. A name given twice keeps its last value.
    `dotted`: a span's attributes (interfaces/trace.py), whose names keep their dots
    (`wkhost.workflow.step`) and pass for nothing of the log's."""
    unsafe, reserved = (_UNSAFE_DOTTED, frozenset()) if dotted else (_UNSAFE, RESERVED_FIELDS)
    out: dict[str, str] = {}
    for name, value in fields[:MAX_FIELDS]:
        safe = unsafe.sub("_", name[:MAX_NAME]) or "_"
        out[safe + "_" if safe in reserved else safe] = value[:MAX_VALUE]
    return out


def _level(level: Any) -> int:
    """The WIT enum's case (wasmtime-py gives an enum case as its name)."""
    return _LEVELS.get(str(getattr(level, "value", level)), logging.INFO)
