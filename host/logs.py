"""Structured logs: one line per record, fit for grep and for machines.

Two formats (`wkhost serve --log-format`): logfmt (the default), `key=value` pairs in a
fixed order (ts, level, logger, msg, then the record's fields, then exc), and JSON, one
object per line with the same keys. A record's fields are what its call passed as
logging's `extra` (`actor(ref, ...)` makes an actor's); each format writes them as keys
of their own, so that an operator can filter by class, id or reason."""

from __future__ import annotations

import json
import logging
import math
import re
import sys
import time
from typing import Any

from .types import ActorRef

LOG_FORMATS = ("logfmt", "json")

# The attributes every LogRecord has: anything else on a record came from `extra`.
_RECORD_ATTRS = frozenset(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {
    "message", "asctime", "taskName"}
_OWN_KEYS = ("ts", "level", "logger", "msg", "exc", "stack")
# What a field from outside (a guest's, interfaces/log.py) may not be named: logging's own
# attributes (it refuses them in `extra`), the formats' keys, and an actor's fields.
RESERVED_FIELDS = _RECORD_ATTRS | frozenset(_OWN_KEYS) | frozenset({"class", "id", "event"})

# logfmt: a value is written bare unless it holds a space, a quote, '=', a backslash or a
# character that is not printable on one line; then it is quoted and escaped: \" \\ \n
# \r \t, and \uXXXX for the rest (lone surrogates included), as JSON strings escape them
# and logfmt parsers (go-logfmt's decoder, for one) read them.
_BARE = re.compile(r'[^\x00-\x20"=\\\x7f-\xa0\u2028\u2029\ud800-\udfff]+')
_ESCAPED = re.compile(r'["\\\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]')
_NAMED_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_KEY_UNSAFE = re.compile(r"[^A-Za-z0-9_.\-]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def actor(ref: ActorRef, **more: object) -> dict[str, object]:
    """The fields of a record about actor `ref` (pass as `extra=`): its class and id,
    then `more` (an event's kind as `event`, why it failed as `reason`)."""
    return {"class": ref.cls, "id": ref.id, **more}


def record_fields(record: logging.LogRecord) -> dict[str, object]:
    """The fields a record carries (its `extra`), each under a key no format's own key
    takes (a field named `msg` or `ts` is written as `msg_`, `ts_`)."""
    return {(k + "_" if k in _OWN_KEYS else k): v for k, v in record.__dict__.items()
            if k not in _RECORD_ATTRS}


def logfmt_value(text: str) -> str:
    """`text` as a logfmt value: bare if it can be, else quoted and escaped."""
    if _BARE.fullmatch(text):
        return text
    return '"' + _ESCAPED.sub(_escape, text) + '"'


def _escape(m: re.Match[str]) -> str:
    ch = m.group()
    return _NAMED_ESCAPES.get(ch) or f"\\u{ord(ch):04x}"


def logfmt_key(key: str) -> str:
    """`key` with what a logfmt key cannot hold (a space, '=', a quote...) made '_'."""
    return _KEY_UNSAFE.sub("_", key) or "_"


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def _timestamp(record: logging.LogRecord) -> str:
    ts = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
    return f"{ts}.{int(record.msecs):03d}Z"


class _Formatter(logging.Formatter):
    def pairs(self, record: logging.LogRecord) -> list[tuple[str, object]]:
        """The record's keys and values, in the order both formats write them."""
        out: list[tuple[str, object]] = [
            ("ts", _timestamp(record)), ("level", record.levelname.lower()),
            ("logger", record.name), ("msg", record.getMessage())]
        out += record_fields(record).items()
        if record.exc_info:
            out.append(("exc", self.formatException(record.exc_info)))
        if record.stack_info:
            out.append(("stack", self.formatStack(record.stack_info)))
        return out


class KeyValueFormatter(_Formatter):
    """logfmt: `ts=... level=warning logger=wkhost msg="..." class=... id=...`."""

    def format(self, record: logging.LogRecord) -> str:
        return " ".join(f"{logfmt_key(k)}={logfmt_value(_text(v))}"
                        for k, v in self.pairs(record))


class JsonFormatter(_Formatter):
    """One JSON object per line: `{"ts": ..., "level": ..., "logger": ..., "msg": ...}`,
    the fields, and `exc` (the traceback, as a string) if there is one."""

    def format(self, record: logging.LogRecord) -> str:
        doc = {k: _json_value(v) for k, v in self.pairs(record)}
        line = json.dumps(doc, ensure_ascii=False)
        # A lone surrogate (from a name decoded with surrogateescape, say) cannot be
        # written as UTF-8: as its \u escape, it reads back as the same string.
        return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", line)


def _json_value(value: object) -> object:
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    return str(value)


_FORMATTERS: dict[str, type[logging.Formatter]] = {
    "logfmt": KeyValueFormatter, "json": JsonFormatter}


def setup(level: str, log_format: str = "logfmt") -> None:
    """Log records at `level` and above to stderr, in `log_format` (LOG_FORMATS)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_FORMATTERS[log_format]())
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
