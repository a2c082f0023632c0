"""wkguest.codec: the Latin-1 wire mapping, parameter checks, query-packed decoding."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from wkguest.codec import (
    S64_MAX,
    S64_MIN,
    SqlValue,
    decode_packed,
    encode_packed,
    from_wire,
    normalize_param,
    normalize_params,
    to_wire,
)

ALL_BYTES = bytes(range(256))


def test_every_byte_value_is_one_character() -> None:
    wire = to_wire(ALL_BYTES)
    assert len(wire) == 256
    assert [ord(c) for c in wire] == list(range(256))
    assert from_wire(wire) == ALL_BYTES


@given(st.binary(max_size=4096))
def test_bytes_round_trip(b: bytes) -> None:
    assert from_wire(to_wire(b)) == b
    assert len(to_wire(b)) == len(b)


@given(st.text(alphabet=st.characters(max_codepoint=0xFF), max_size=1024))
def test_wire_strings_round_trip(s: str) -> None:
    assert to_wire(from_wire(s)) == s


def test_bytes_like_inputs() -> None:
    assert to_wire(bytearray(b"\x00\xff")) == "\x00\xff"
    assert to_wire(memoryview(b"ab")) == "ab"


def test_a_character_above_ff_is_not_wire_data() -> None:
    with pytest.raises(UnicodeEncodeError):
        from_wire("\u0100")


@pytest.mark.parametrize(
    ("given_", "expected"),
    [(None, None), (1, 1), (-5, -5), (2.5, 2.5), ("x", "x"), (b"\x00", b"\x00"),
     (True, 1), (False, 0), (bytearray(b"ab"), b"ab"), (memoryview(b"cd"), b"cd"),
     (S64_MAX, S64_MAX), (S64_MIN, S64_MIN)],
)
def test_normalize_param(given_: object, expected: object) -> None:
    out = normalize_param(given_)
    assert out == expected
    assert type(out) is type(expected)  # bool -> int, bytearray -> bytes


@pytest.mark.parametrize("bad", [S64_MAX + 1, S64_MIN - 1, [1], {"a": 1}, object(), 1j])
def test_normalize_param_rejects(bad: object) -> None:
    with pytest.raises(TypeError):
        normalize_param(bad)


def test_params_must_be_a_sequence_of_values() -> None:
    assert normalize_params((1, "a")) == [1, "a"]
    for bad in ("abc", b"abc"):
        with pytest.raises(TypeError):
            normalize_params(bad)


def test_nan_is_a_real() -> None:
    out = normalize_param(float("nan"))
    assert isinstance(out, float) and math.isnan(out)


sql_values = st.one_of(
    st.none(),
    st.integers(min_value=S64_MIN, max_value=S64_MAX),
    st.floats(allow_nan=False),
    st.text(),
    st.binary(),
)


@given(st.lists(st.lists(sql_values, min_size=2, max_size=2), max_size=5))
def test_packed_round_trip(rows: list[list[SqlValue]]) -> None:
    packed = encode_packed(["a", "b"], rows)
    columns, decoded = decode_packed(packed)
    assert columns == ["a", "b"]
    assert decoded == [tuple(r) for r in rows]


def test_packed_blob_and_errors() -> None:
    assert decode_packed('[["x"], [{"b64": "AP8="}], [null]]') == (["x"], [(b"\x00\xff",), (None,)])
    for bad in ("{}", "[]", "[1]", '[["x"], [[1]]]', "nope"):
        with pytest.raises(ValueError):
            decode_packed(bad)
