"""The values a workflow records, and their stored encoding.

Supported types (step results, inputs, event payloads, outputs):

    None, bool, int (from -2**64 to 2**64 - 1), float (nan and ±inf included), str,
    bytes (bytearray and memoryview are accepted and come back as bytes),
    list and tuple (both come back as list), dict with str keys (any order, kept).

Anything else (a set, a dataclass, a dict with int keys, a str holding a lone surrogate,
nesting deeper than 100) raises UnsupportedValue naming where it is. These are exactly the
types the CBOR protocol carries, so any value a workflow records can also be reported.

Stored form: compact JSON text (`separators=(",", ":")`, non-ASCII kept as is, NaN and
Infinity as Python's json writes them). JSON has no bytes, so two kinds of str are
*tagged*: a stored JSON string that starts with U+0000 is a tag, then a body:

    "\\u0000b" + base64(b)      a bytes value b (standard alphabet, padded)
    "\\u0000s" + s              a str s that itself starts with U+0000

A value whose text holds a tag is stored with a "tagged" flag (a column, or the journal
entry's kind), so decoding walks the value only then: the common case is one json.loads.
Dict keys are never tagged. The limit (`Config.max_value_bytes`) applies to the UTF-8
length of this text.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from typing import Any

from ..errors import UnsupportedValue, ValueTooLarge

MAX_DEPTH = 100
INT_MIN = -(2**64)
INT_MAX = 2**64 - 1
MAX_NAME_CHARS = 256

_encoder = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=True)
# The C encoder that JSONEncoder.encode builds anew on every call, built once: in a guest
# that setup cost more than encoding a small step result. No cycle check (markers=None):
# `_scan` has already refused nesting deeper than MAX_DEPTH. Same text as .encode.
_c_make_encoder: Any = getattr(json.encoder, "c_make_encoder", None)
_iterencode = None if _c_make_encoder is None else _c_make_encoder(
    None, _encoder.default, json.encoder.encode_basestring, None, ":", ",",
    False, False, True)


def _dumps(value: Any) -> str:
    if _iterencode is None:
        return _encoder.encode(value)
    return "".join(_iterencode(value, 0))


_BYTES = (bytes, bytearray, memoryview)


def encode(value: Any, limit: int, what: str = "value") -> tuple[str, bool]:
    """`value` → (JSON text, tagged).

    Raises UnsupportedValue (a type outside the list above), ValueTooLarge (over `limit`
    bytes; the message names the limit and `what`).
    """
    try:
        tagged = _scan(value, 0)
    except UnsupportedValue as e:
        raise UnsupportedValue(f"{what}{_where(e)}") from None
    text = _dumps(_tag(value) if tagged else value)
    if text.isascii():
        size = len(text)
    else:
        try:
            size = len(text.encode("utf-8"))
        except UnicodeEncodeError:
            raise UnsupportedValue(f"{what} holds a str with a lone surrogate") from None
    if size > limit:
        raise ValueTooLarge(
            f"{what} is {size:,} bytes encoded, over the limit of {limit:,} bytes "
            "(Config.max_value_bytes)"
        )
    return text, tagged


def decode(text: str, tagged: bool) -> Any:
    """Stored text → a fresh value. Raises ValueError if the text is not this encoding."""
    value = json.loads(text)
    return revive(value) if tagged else value


def roundtrip(value: Any, limit: int, what: str = "value") -> tuple[str, bool, Any]:
    """Encode `value` and decode it again: the first run must see what a replay will see
    (a tuple comes back as a list, a bytearray as bytes). Raises as `encode`."""
    text, tagged = encode(value, limit, what)
    return text, tagged, decode(text, tagged)


def check_name(name: object, what: str) -> str:
    """A step or event name: a str of 1 to 256 characters, none below U+0020 (the journal
    separates names with U+001E). Raises TypeError or ValueError saying which."""
    if not isinstance(name, str):
        raise TypeError(f"{what} name must be a str, not {type(name).__name__}")
    if not 0 < len(name) <= MAX_NAME_CHARS:
        raise ValueError(f"{what} name must have 1 to {MAX_NAME_CHARS} characters: {name!r}")
    if not name.isprintable() and any(c < " " for c in name):
        raise ValueError(f"{what} name holds a control character: {name!r}")
    return name


def _scan(v: Any, depth: int) -> bool:
    """Check `v`; True if its stored form needs tags. Raises UnsupportedValue."""
    t = type(v)
    if t is str:
        return bool(v[:1] == "\x00")
    if v is None or t is bool or t is float:
        return False
    if t is int:
        if INT_MIN <= v <= INT_MAX:
            return False
        raise UnsupportedValue(f"int {v} is outside -2**64 .. 2**64-1")
    if depth >= MAX_DEPTH:
        raise UnsupportedValue(f"value nested deeper than {MAX_DEPTH} (a cycle?)")
    if t is list or t is tuple:
        return _scan_items(v, depth)
    if t is dict:
        return _scan_dict(v, depth)
    return _scan_other(v, depth)


def _scan_items(v: list[Any] | tuple[Any, ...], depth: int) -> bool:
    tagged = False
    for i, x in enumerate(v):
        try:
            tagged = _scan(x, depth + 1) or tagged
        except UnsupportedValue as e:
            raise UnsupportedValue(f"[{i}]{_where(e)}") from None
    return tagged


def _scan_dict(v: dict[Any, Any], depth: int) -> bool:
    tagged = False
    for k, x in v.items():
        if not isinstance(k, str):
            raise UnsupportedValue(f": dict key {k!r} is not a str")
        try:
            tagged = _scan(x, depth + 1) or tagged
        except UnsupportedValue as e:
            raise UnsupportedValue(f"[{k!r}]{_where(e)}") from None
    return tagged


def _scan_other(v: Any, depth: int) -> bool:
    # Subclasses (IntEnum, OrderedDict, ...) are accepted and come back as the base type.
    if isinstance(v, _BYTES):
        return True
    if isinstance(v, (bool, float)):
        return False
    if isinstance(v, str):
        return v[:1] == "\x00"
    if isinstance(v, int):
        return _scan(int(v), depth)
    if isinstance(v, (list, tuple)):
        return _scan_items(v, depth)
    if isinstance(v, dict):
        return _scan_dict(v, depth)
    raise UnsupportedValue(
        f": {type(v).__name__} is not a supported workflow value "
        "(None, bool, int, float, str, bytes, list, tuple, dict with str keys)"
    )


def _where(e: UnsupportedValue) -> str:
    msg = str(e)
    return msg if msg.startswith(("[", ":")) else f": {msg}"


def _tag(v: Any) -> Any:
    """The JSON-able form of a value that needs tags (checked by `_scan` already)."""
    if isinstance(v, str):
        return "\x00s" + v if v[:1] == "\x00" else v
    if isinstance(v, _BYTES):
        return "\x00b" + base64.b64encode(v).decode("ascii")
    if isinstance(v, (list, tuple)):
        return [_tag(x) for x in v]
    if isinstance(v, dict):
        return {k: _tag(x) for k, x in v.items()}
    return v


def revive(v: Any) -> Any:
    """Undo the tags of a decoded tagged value (a fresh copy). Raises ValueError."""
    t = type(v)
    if t is str:
        return _untag(v) if v[:1] == "\x00" else v
    if t is list:
        return [revive(x) for x in v]
    if t is dict:
        return {k: revive(x) for k, x in v.items()}
    return v


def _untag(s: str) -> Any:
    tag, body = s[1:2], s[2:]
    if tag == "s":
        return body
    if tag == "b":
        try:
            return base64.b64decode(body, validate=True)
        except (binascii.Error, ValueError):
            raise ValueError(f"bad base64 in a tagged bytes value: {body[:40]!r}") from None
    raise ValueError(f"unknown value tag {tag!r}")


def check_ms(t: object, what: str) -> int:
    """A duration or a time in milliseconds: a finite number, 0 or more. Raises TypeError
    or ValueError naming `what`."""
    if isinstance(t, bool) or not isinstance(t, (int, float)):
        raise TypeError(f"{what} must be a number of milliseconds, not {t!r} "
                        f"({type(t).__name__})")
    if not math.isfinite(t) or t < 0:
        raise ValueError(f"{what} must be 0 or more milliseconds, not {t!r}")
    return int(t)
