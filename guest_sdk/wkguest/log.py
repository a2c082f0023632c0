"""Records in the host's log, with fields (WIT interface `log`).

    log.warning("payment refused", order="o-17", attempt="2")

Each record goes to the host's log under `wkhost.guest.<class>`, beside the actor's
class, id and event; each field is a key of its own in `--log-format logfmt` or `json`,
for an operator to filter by. The host bounds what it keeps (a message's first 4,096
characters, 32 fields, a value's first 1,024 characters) and counts each record against
the event's output cap, with what the actor prints.
"""

from __future__ import annotations

from wkguest import _bindings as _b

__all__ = ["debug", "error", "info", "warning", "write"]

LEVELS = ("debug", "info", "warning", "error")


def write(level: str, message: str, **fields: object) -> None:
    """One record at `level` ("debug", "info", "warning" or "error"). A field's value is
    written as its str(); a None is left out. Never raises for what the host bounds."""
    if level not in LEVELS:
        raise ValueError(f"level must be one of {', '.join(LEVELS)}, not {level!r}")
    pairs = [(k, str(v)) for k, v in fields.items() if v is not None]
    _b.log.write(_b.log.Level[level.upper()], str(message), pairs)


def debug(message: str, **fields: object) -> None:
    write("debug", message, **fields)


def info(message: str, **fields: object) -> None:
    write("info", message, **fields)


def warning(message: str, **fields: object) -> None:
    write("warning", message, **fields)


def error(message: str, **fields: object) -> None:
    write("error", message, **fields)
