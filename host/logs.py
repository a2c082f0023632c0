"""Structured logs: one line per record, `key=value` pairs, fit for grep and for machines."""

from __future__ import annotations

import logging
import sys
import time
from typing import Any


class KeyValueFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        ts = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
        msg = record.getMessage().replace("\n", "\\n")
        line = f'ts={ts}.{int(record.msecs):03d}Z level={record.levelname.lower()} ' \
               f'logger={record.name} msg="{msg}"'
        if record.exc_info:
            exc = self.formatException(record.exc_info).replace("\n", "\\n")
            line += f' exc="{exc}"'
        return line


def setup(level: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(KeyValueFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    logging.getLogger("aiohttp").setLevel(max(logging.WARNING, root.level))


class ClientFaults(logging.LoggerAdapter[logging.Logger]):
    """A logger for records that may be about a client's fault, such as aiohttp's server
    writes (a malformed request, a connection lost in the middle of one).

    A record whose exception is one of `faults` is one line at info at most: the message,
    the exception's name and its text, no traceback. A client's mistakes are not the
    host's errors, and anyone may send them. Any other record is kept as it is, so a
    failure of the host's still gets its traceback, at error."""

    def __init__(self, logger: logging.Logger,
                 faults: tuple[type[BaseException], ...]) -> None:
        super().__init__(logger, {})
        self.faults = faults

    def log(self, level: int, msg: object, *args: object, **kwargs: Any) -> None:
        exc = _exception(kwargs.get("exc_info"))
        if exc is not None and isinstance(exc, self.faults):
            text = str(msg) % args if args else str(msg)
            msg, args = f"{text}: {type(exc).__name__}: {one_line(exc)}", ()
            level = min(level, logging.INFO)
            kwargs["exc_info"] = None
        super().log(level, msg, *args, **kwargs)


def one_line(exc: BaseException, limit: int = 200) -> str:
    """An exception's text with its line breaks and runs of spaces folded, cut short."""
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _exception(exc_info: object) -> BaseException | None:
    """The exception a record's `exc_info` stands for (True: the one being handled)."""
    if isinstance(exc_info, BaseException):
        return exc_info
    if exc_info is True:
        return sys.exc_info()[1]
    if isinstance(exc_info, tuple) and len(exc_info) == 3:
        value = exc_info[1]
        return value if isinstance(value, BaseException) else None
    return None
