"""Wire encodings shared by the guest SDK and its tests (plain CPython, no bindings).

Every `bytes` in the WIT is a `string` in which each character is U+0000..U+00FF and
stands for one byte: Latin-1 is exactly that mapping, and both directions are C loops
(see wit/world.wit for why this beats `list<u8>`).

This module also holds the pure-Python halves of `wkguest.sqlite`: checking a parameter
before it becomes a WIT `value`, and decoding `query-packed`'s JSON.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from typing import Any

SqlValue = None | int | float | str | bytes
"""What a column holds, as Python sees it: NULL, INTEGER, REAL, TEXT, BLOB."""

SqlParam = SqlValue | bool | bytearray | memoryview
"""What `wkguest.sqlite` accepts as a parameter (normalised by `normalize_param`)."""

S64_MIN = -(2**63)
S64_MAX = 2**63 - 1

# isinstance's class tuples, made once: `float | str` builds a new union on every call,
# which in a guest costs more than the check itself.
_PLAIN_PARAM = (float, str, bytes)
_BYTES_LIKE = (bytearray, memoryview)
_TEXT_OR_BYTES = (str, bytes)
_PACKED_SCALAR = (int, float, str)


def to_wire(b: bytes | bytearray | memoryview) -> str:
    """Bytes → the WIT `bytes` string (one character per byte). Never raises."""
    return bytes(b).decode("latin-1")


def from_wire(s: str) -> bytes:
    """The WIT `bytes` string → bytes.

    Raises UnicodeEncodeError if a character is above U+00FF (not valid wire data).
    """
    return s.encode("latin-1")


def normalize_param(x: object) -> SqlValue:
    """One SQL parameter, checked and normalised to a `SqlValue`.

    bool becomes int (SQLite has no boolean), bytearray/memoryview become bytes.
    Raises TypeError for any other type, or for an int outside the signed 64-bit range
    (SQLite could not store it, and the WIT `s64` could not carry it).
    """
    if x is None or isinstance(x, _PLAIN_PARAM):
        return x
    if isinstance(x, int):  # bool included: it is an int subclass
        if not S64_MIN <= x <= S64_MAX:
            raise TypeError(f"SQL integer parameter out of the signed 64-bit range: {x}")
        return int(x)
    if isinstance(x, _BYTES_LIKE):
        return bytes(x)
    raise TypeError(f"unsupported SQL parameter type: {type(x).__name__}")


def normalize_params(params: Sequence[object]) -> list[SqlValue]:
    """`normalize_param` over a sequence. Raises TypeError (see there)."""
    if isinstance(params, _TEXT_OR_BYTES):  # a common slip: exec(sql, "x") is 1 param, not 1
        raise TypeError("SQL params must be a sequence of values, not a str or bytes")
    return [normalize_param(p) for p in params]


def _packed_value(v: Any) -> SqlValue:
    if isinstance(v, dict):  # the only object form is a blob: {"b64": "..."}
        return base64.b64decode(v["b64"])
    if v is None or isinstance(v, _PACKED_SCALAR):
        return v
    raise ValueError(f"unexpected value in query-packed output: {v!r}")


def decode_packed(packed: str) -> tuple[list[str], list[tuple[SqlValue, ...]]]:
    """`query-packed`'s JSON → (column names, rows as tuples); blobs become bytes.

    Raises ValueError (json.JSONDecodeError included) if the text is not that format.
    """
    doc = json.loads(packed)
    if not isinstance(doc, list) or not doc or not isinstance(doc[0], list):
        raise ValueError("query-packed output is not [columns, row, ...]")
    columns = [str(c) for c in doc[0]]
    rows = [tuple(_packed_value(v) for v in row) for row in doc[1:]]
    return columns, rows


def encode_packed(columns: Sequence[str], rows: Sequence[Sequence[SqlValue]]) -> str:
    """The inverse of `decode_packed` (what the host sends); used by tests and fakes."""

    def enc(v: SqlValue) -> Any:
        if isinstance(v, bytes):
            return {"b64": base64.b64encode(v).decode("ascii")}
        return v

    return json.dumps([list(columns), *[[enc(v) for v in row] for row in rows]])
