"""values.py: the supported types, the stored encoding, tags, limits and names."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from wkguest.workflow.core.values import check_name, decode, encode, roundtrip
from wkguest.workflow.errors import UnsupportedValue, ValueTooLarge

LIMIT = 1 << 20

scalars = st.none() | st.booleans() | st.integers(-(2**64), 2**64 - 1) | st.text() | st.binary()
values = st.recursive(
    scalars | st.floats(allow_nan=False),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids,
                                                                max_size=4),
    max_leaves=20,
)


@given(values)
def test_roundtrip_is_identity_for_supported_values(v: object) -> None:
    text, tagged, back = roundtrip(v, LIMIT)
    assert back == v
    assert decode(text, tagged) == v
    assert "\n" not in text  # compact


@given(values)
def test_the_stored_text_is_what_json_dumps_writes(v: object) -> None:
    # values.py calls the C encoder directly; the stored form must not change with it.
    from wkguest.workflow.core.values import _tag

    text, tagged = encode(v, LIMIT)
    plain = _tag(v) if tagged else v
    assert text == json.dumps(plain, ensure_ascii=False, separators=(",", ":"))


def test_plain_values_are_plain_json() -> None:
    text, tagged = encode({"order": "ord-1", "n": 3, "ok": True, "x": None}, LIMIT)
    assert not tagged
    assert json.loads(text) == {"order": "ord-1", "n": 3, "ok": True, "x": None}
    assert text == '{"order":"ord-1","n":3,"ok":true,"x":null}'


def test_bytes_and_nul_strings_are_tagged() -> None:
    text, tagged = encode([b"\x00\xff", "\x00lead", "plain", {"k": b""}], LIMIT)
    assert tagged
    assert json.loads(text) == ["\x00bAP8=", "\x00s\x00lead", "plain", {"k": "\x00b"}]
    assert decode(text, True) == [b"\x00\xff", "\x00lead", "plain", {"k": b""}]


def test_tuples_come_back_as_lists_and_bytearray_as_bytes() -> None:
    _, _, back = roundtrip({"t": (1, (2, 3)), "b": bytearray(b"ab"), "m": memoryview(b"c")},
                           LIMIT)
    assert back == {"t": [1, [2, 3]], "b": b"ab", "m": b"c"}
    assert type(back["b"]) is bytes


def test_non_finite_floats_survive() -> None:
    _, _, back = roundtrip([math.inf, -math.inf, math.nan], LIMIT)
    assert back[0] == math.inf and back[1] == -math.inf and math.isnan(back[2])


@pytest.mark.parametrize(("value", "where"), [
    ({1, 2}, "set is not a supported"),
    ({"a": [1, object()]}, "['a'][1]: object is not a supported"),
    ({1: "x"}, "dict key 1 is not a str"),
    (2**64, "outside -2**64"),
    (-(2**64) - 1, "outside -2**64"),
    ("\ud800", "lone surrogate"),
])
def test_unsupported_values_say_where(value: object, where: str) -> None:
    with pytest.raises(UnsupportedValue, match="^the input") as e:
        encode(value, LIMIT, "the input")
    assert where in str(e.value)


def test_cycles_and_deep_nesting_are_refused() -> None:
    cyc: list[object] = []
    cyc.append(cyc)
    with pytest.raises(UnsupportedValue, match="deeper than 100"):
        encode(cyc, LIMIT)
    deep: object = 1
    for _ in range(150):
        deep = [deep]
    with pytest.raises(UnsupportedValue, match="deeper"):
        encode(deep, LIMIT)


def test_limit_names_the_limit_and_counts_utf8_bytes() -> None:
    encode("x" * 98, 100)  # 100 bytes with the quotes: at the limit is fine
    with pytest.raises(ValueTooLarge, match=r"101 bytes encoded, over the limit of 100 bytes "
                       r"\(Config.max_value_bytes\)"):
        encode("x" * 99, 100, "the result")
    with pytest.raises(ValueTooLarge, match="102 bytes"):
        encode("é" * 50, 100)  # 2 bytes each in UTF-8


def test_subclasses_come_back_as_base_types() -> None:
    import enum
    from collections import OrderedDict

    class Color(enum.IntEnum):
        RED = 1

    _, _, back = roundtrip(OrderedDict(c=Color.RED), LIMIT)
    assert back == {"c": 1} and type(back) is dict and type(back["c"]) is int


def test_decode_rejects_bad_tags() -> None:
    with pytest.raises(ValueError, match="unknown value tag"):
        decode('"\\u0000q"', True)
    with pytest.raises(ValueError, match="bad base64"):
        decode('"\\u0000b!!"', True)


@pytest.mark.parametrize("bad", ["", "x" * 257, "a\x1eb", "tab\there", "nl\n"])
def test_names_are_checked(bad: str) -> None:
    with pytest.raises(ValueError):
        check_name(bad, "step")


def test_names_may_be_any_printable_text() -> None:
    assert check_name("charge card — step 2 ✓", "step") == "charge card — step 2 ✓"
    with pytest.raises(TypeError, match="must be a str"):
        check_name(3, "event")
