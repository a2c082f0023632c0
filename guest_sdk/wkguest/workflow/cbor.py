"""A small, strict, deterministic CBOR (RFC 8949) codec for the wk-workflow protocol.

The guest has no cbor2 (only the stdlib), and the protocol needs only this subset:

    major 0/1  int, -2**64 .. 2**64-1        major 2  bytes       major 3  text (UTF-8)
    major 4    array (list; tuple encodes)   major 5  map with text keys
    major 7    false, true, null, float16/32/64

Encoding is deterministic (RFC 8949 section 4.2.1, "core deterministic"): the shortest
head for every length and int, definite lengths only, map keys sorted by their encoded
bytes, and each float in the shortest of float16/32/64 that keeps its exact value (NaN is
f97e00). Equal values always give equal bytes.

Decoding is strict about structure and liberal about width: a longer-than-needed head or
float width is accepted (other encoders may send them), while indefinite lengths, tags,
`undefined` and other simple values, reserved additional info, non-text or duplicate map
keys, invalid UTF-8, nesting deeper than 100, truncation and trailing bytes all raise
CborError. Every step consumes input, and no length is trusted before it is checked
against what is left, so malformed input cannot hang it or make it allocate.
"""

from __future__ import annotations

import math
import struct
from typing import Any

from .errors import CborError

MAX_DEPTH = 100

__all__ = ["MAX_DEPTH", "dumps", "loads"]


def dumps(value: Any) -> bytes:
    """`value` → CBOR bytes. Raises CborError for a type or int outside the subset."""
    out = bytearray()
    _encode(value, out, 0)
    return bytes(out)


def loads(data: bytes | bytearray | memoryview) -> Any:
    """CBOR bytes → value (dict, list, str, bytes, int, float, bool, None).

    Raises CborError (malformed, truncated, trailing bytes, or outside the subset)."""
    buf = bytes(data)
    value, pos = _Decoder(buf).item(0, 0)
    if pos != len(buf):
        raise CborError(f"{len(buf) - pos} trailing byte(s) after the CBOR item")
    return value


# -- encoding ------------------------------------------------------------------------


def _head(major: int, n: int, out: bytearray) -> None:
    mt = major << 5
    if n < 24:
        out.append(mt | n)
    elif n < 0x100:
        out += bytes((mt | 24, n))
    elif n < 0x10000:
        out.append(mt | 25)
        out += n.to_bytes(2, "big")
    elif n < 0x100000000:
        out.append(mt | 26)
        out += n.to_bytes(4, "big")
    else:
        out.append(mt | 27)
        out += n.to_bytes(8, "big")


def _encode(v: Any, out: bytearray, depth: int) -> None:
    # The common exact types first, by identity, and the small str and int written here,
    # without a call: in a guest, Python runs many times slower than natively, and the
    # status map a client polls for is encoded on every poll.
    t = type(v)
    if t is str:
        if len(v) < 24 and v.isascii():
            out.append(0x60 | len(v))
            out += v.encode("ascii")
        else:
            _encode_text(v, out)
    elif t is int:
        if 0 <= v < 24:
            out.append(v)
        else:
            _encode_int(v, out)
    elif v is None:
        out.append(0xF6)
    elif t is dict:
        _encode_map(v, out, depth)
    elif t is list:
        _encode_array(v, out, depth)
    else:
        _encode_other(v, out, depth)


def _encode_other(v: Any, out: bytearray, depth: int) -> None:
    """The rarer types, and subclasses of the common ones (by isinstance)."""
    if depth > MAX_DEPTH:
        raise CborError(f"value nested deeper than {MAX_DEPTH}")
    if v is True or v is False:
        out.append(0xF5 if v else 0xF4)
    elif isinstance(v, int):
        _encode_int(int(v), out)
    elif isinstance(v, float):
        _encode_float(v, out)
    elif isinstance(v, str):
        _encode_text(str(v), out)
    elif isinstance(v, (bytes, bytearray, memoryview)):
        raw = bytes(v)
        _head(2, len(raw), out)
        out += raw
    elif isinstance(v, (list, tuple)):
        _encode_array(v, out, depth)
    elif isinstance(v, dict):
        _encode_map(v, out, depth)
    else:
        raise CborError(f"cannot encode {type(v).__name__} in wk-workflow CBOR")


def _encode_array(v: list[Any] | tuple[Any, ...], out: bytearray, depth: int) -> None:
    if depth > MAX_DEPTH or (v and depth == MAX_DEPTH):  # a child would be too deep
        raise CborError(f"value nested deeper than {MAX_DEPTH}")
    _head(4, len(v), out)
    for x in v:
        _encode(x, out, depth + 1)


def _encode_int(n: int, out: bytearray) -> None:
    if 0 <= n < 2**64:
        _head(0, n, out)
    elif -(2**64) <= n < 0:
        _head(1, -1 - n, out)
    else:
        raise CborError(f"int {n} is outside -2**64 .. 2**64-1")


def _encode_text(s: str, out: bytearray) -> None:
    try:
        raw = s.encode("utf-8")
    except UnicodeEncodeError:
        raise CborError("text holds a lone surrogate (not UTF-8)") from None
    _head(3, len(raw), out)
    out += raw


def _encode_float(f: float, out: bytearray) -> None:
    if math.isnan(f):
        out += b"\xf9\x7e\x00"
        return
    for code, fmt in ((0xF9, ">e"), (0xFA, ">f")):
        try:
            packed = struct.pack(fmt, f)
        except OverflowError:
            continue
        if struct.unpack(fmt, packed)[0] == f:
            out.append(code)
            out += packed
            return
    out.append(0xFB)
    out += struct.pack(">d", f)


# A map's keys in encoding order, with their encodings, by the keys in the map's own
# order: the protocol's maps come in a few shapes, again and again, and sorting them
# each time was most of the encoding. Bounded, so that a caller with ever new keys
# cannot grow it without end; past the bound, maps are sorted each time.
_ORDERS: dict[tuple[Any, ...], tuple[tuple[bytes, str], ...]] = {}
_MAX_ORDERS = 256


def _order(keys: tuple[Any, ...]) -> tuple[tuple[bytes, str], ...]:
    encoded = []
    for k in keys:
        if not isinstance(k, str):
            raise CborError(f"map key {k!r} is not text")
        buf = bytearray()
        _encode_text(str(k), buf)
        encoded.append((bytes(buf), k))
    # Keys are unique, and so are their encodings: the sort never compares two keys.
    order = tuple(sorted(encoded))
    if len(_ORDERS) < _MAX_ORDERS and all(type(k) is str for k in keys):
        _ORDERS[keys] = order
    return order


def _encode_map(m: dict[Any, Any], out: bytearray, depth: int) -> None:
    if depth > MAX_DEPTH or (m and depth == MAX_DEPTH):  # a child would be too deep
        raise CborError(f"value nested deeper than {MAX_DEPTH}")
    keys = tuple(m)
    order = _ORDERS.get(keys) or _order(keys)
    _head(5, len(order), out)
    for key, k in order:
        out += key
        _encode(m[k], out, depth + 1)


# -- decoding ------------------------------------------------------------------------


class _Decoder:
    def __init__(self, buf: bytes) -> None:
        self.buf = buf

    def item(self, pos: int, depth: int) -> tuple[Any, int]:
        if depth > MAX_DEPTH:
            raise CborError(f"CBOR nested deeper than {MAX_DEPTH}")
        if pos >= len(self.buf):
            raise CborError("truncated CBOR: an item is missing")
        ib = self.buf[pos]
        major, info = ib >> 5, ib & 0x1F
        if major == 7:
            return self._simple(info, pos + 1)
        n, pos = self._arg(info, pos + 1)
        if major == 0:
            return n, pos
        if major == 1:
            return -1 - n, pos
        if major == 2:
            raw, pos = self._take(n, pos)
            return raw, pos
        if major == 3:
            return self._text(n, pos)
        if major == 4:
            return self._array(n, pos, depth)
        if major == 5:
            return self._map(n, pos, depth)
        raise CborError("CBOR tags are not part of wk-workflow/v1")

    def _arg(self, info: int, pos: int) -> tuple[int, int]:
        if info < 24:
            return info, pos
        if info == 31:
            raise CborError("indefinite-length CBOR items are not accepted")
        if info > 27:
            raise CborError(f"reserved CBOR additional information {info}")
        size = 1 << (info - 24)
        raw, pos = self._take(size, pos)
        return int.from_bytes(raw, "big"), pos

    def _take(self, n: int, pos: int) -> tuple[bytes, int]:
        end = pos + n
        if end > len(self.buf):
            raise CborError(f"truncated CBOR: {n} byte(s) announced, {len(self.buf) - pos} left")
        return self.buf[pos:end], end

    def _text(self, n: int, pos: int) -> tuple[str, int]:
        raw, pos = self._take(n, pos)
        try:
            return raw.decode("utf-8"), pos
        except UnicodeDecodeError:
            raise CborError("CBOR text is not valid UTF-8") from None

    def _check_count(self, n: int, pos: int) -> None:
        # Every element takes at least one byte: a count past the end is malformed, and
        # checking it first keeps a forged huge count from looping or allocating.
        if n > len(self.buf) - pos:
            raise CborError(f"truncated CBOR: {n} element(s) announced")

    def _array(self, n: int, pos: int, depth: int) -> tuple[list[Any], int]:
        self._check_count(n, pos)
        out = []
        for _ in range(n):
            x, pos = self.item(pos, depth + 1)
            out.append(x)
        return out, pos

    def _map(self, n: int, pos: int, depth: int) -> tuple[dict[str, Any], int]:
        self._check_count(2 * n, pos)
        out: dict[str, Any] = {}
        for _ in range(n):
            if pos < len(self.buf) and self.buf[pos] >> 5 != 3:
                raise CborError("CBOR map keys must be text")
            k, pos = self.item(pos, depth + 1)
            if k in out:
                raise CborError(f"duplicate CBOR map key {k!r}")
            out[k], pos = self.item(pos, depth + 1)
        return out, pos

    def _simple(self, info: int, pos: int) -> tuple[Any, int]:
        if info == 20:
            return False, pos
        if info == 21:
            return True, pos
        if info == 22:
            return None, pos
        if info in (25, 26, 27):
            fmt = {25: ">e", 26: ">f", 27: ">d"}[info]
            raw, pos = self._take(struct.calcsize(fmt), pos)
            return float(struct.unpack(fmt, raw)[0]), pos
        raise CborError(f"CBOR simple value {info} is not part of wk-workflow/v1")
