"""cbor.py against the real cbor2: round trips both ways, determinism, strictness."""

from __future__ import annotations

import contextlib
import enum
import math

import cbor2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from wkguest.workflow import cbor
from wkguest.workflow.errors import CborError

scalars = (st.none() | st.booleans() | st.integers(-(2**64), 2**64 - 1)
           | st.floats(allow_nan=False) | st.text() | st.binary())
values = st.recursive(
    scalars,
    lambda kids: st.lists(kids, max_size=5) | st.dictionaries(st.text(max_size=10), kids,
                                                                max_size=5),
    max_leaves=30,
)


@given(values)
def test_ours_decoded_by_cbor2(v: object) -> None:
    assert cbor2.loads(cbor.dumps(v)) == v


@given(values)
def test_cbor2_decoded_by_ours(v: object) -> None:
    assert cbor.loads(cbor2.dumps(v)) == v
    assert cbor.loads(cbor2.dumps(v, canonical=True)) == v


@given(values)
def test_deterministic_and_equal_to_cbor2_canonical(v: object) -> None:
    ours = cbor.dumps(v)
    assert ours == cbor.dumps(cbor.loads(ours))
    assert ours == cbor2.dumps(v, canonical=True)


def test_floats_take_the_shortest_exact_width() -> None:
    assert cbor.dumps(1.5).hex() == "f93e00"
    assert cbor.dumps(100000.0).hex() == "fa47c35000"
    assert cbor.dumps(1.1).hex() == "fb3ff199999999999a"
    assert cbor.dumps(math.inf).hex() == "f97c00"
    assert cbor.dumps(math.nan).hex() == "f97e00"
    assert math.isnan(cbor.loads(bytes.fromhex("fb7ff8000000000000")))


def test_map_keys_sorted_by_encoded_bytes() -> None:
    assert cbor.dumps({"bb": 1, "a": 2, "c": 3}).hex() == "a361610261630362626201"


def test_integer_edges() -> None:
    for n in (0, 23, 24, 255, 256, 65535, 65536, 2**32 - 1, 2**32, 2**64 - 1, -1, -(2**64)):
        assert cbor.loads(cbor.dumps(n)) == n == cbor2.loads(cbor.dumps(n))
    with pytest.raises(CborError):
        cbor.dumps(2**64)


def test_tuples_encode_as_arrays() -> None:
    assert cbor.loads(cbor.dumps((1, (2,)))) == [1, [2]]


@pytest.mark.parametrize(("hexdata", "why"), [
    ("", "truncated"),
    ("18", "truncated"),
    ("6261", "truncated"),
    ("5f41614162ff", "indefinite"),
    ("9f01ff", "indefinite"),
    ("c11a514b67b0", "tags"),
    ("f7", "simple value 23"),
    ("f0", "simple value 16"),
    ("1c", "reserved"),
    ("a10102", "keys must be text"),
    ("a2616101616102", "duplicate"),
    ("62c328", "UTF-8"),
    ("0101", "trailing"),
    ("9bffffffffffffffff", "announced"),
    ("bbffffffffffffffff", "announced"),
    ("5bffffffffffffffff", "announced"),
])
def test_malformed_input_raises_a_clean_error(hexdata: str, why: str) -> None:
    with pytest.raises(CborError, match=why):
        cbor.loads(bytes.fromhex(hexdata))


def test_nesting_is_capped() -> None:
    with pytest.raises(CborError, match="deeper"):
        cbor.loads(b"\x81" * 200 + b"\x00")
    with pytest.raises(CborError, match="deeper"):
        cbor.dumps(_nest(150))


def _nest(n: int) -> object:
    v: object = 0
    for _ in range(n):
        v = [v]
    return v


def test_nesting_cap_is_exact_for_every_container() -> None:
    # 100 levels of containers around an empty one encode; one more level does not.
    for leaf in ([], {}):
        v: object = leaf
        for i in range(100):
            v = [v] if i % 2 else {"k": v}
        assert cbor.loads(cbor.dumps(v)) == v
        with pytest.raises(CborError, match="deeper"):
            cbor.dumps([v])


def test_map_key_orders_are_cached_by_shape_and_bounded() -> None:
    a = {"state": 1, "a": None, "run_id": "x", "zz": [1]}
    b = dict(reversed(list(a.items())))
    assert cbor.dumps(a) == cbor.dumps(b) == cbor2.dumps(a, canonical=True)
    # Far more key sets than the cache keeps: each still encodes canonically.
    for i in range(cbor._MAX_ORDERS * 2):
        m = {f"k{i}": i, "a": i, f"{i}z": None}
        assert cbor.dumps(m) == cbor2.dumps(m, canonical=True)
    assert len(cbor._ORDERS) <= cbor._MAX_ORDERS


def test_subclasses_encode_as_their_base_type() -> None:
    class Key(str):
        pass

    class Num(enum.IntEnum):
        ONE = 1
        BIG = 2**40

    v = {Key("k"): [Num.ONE, Num.BIG, Key("text")], "b": True}
    plain = {"k": [1, 2**40, "text"], "b": True}
    assert cbor.dumps(v) == cbor.dumps(plain) == cbor2.dumps(plain, canonical=True)


def test_unsupported_types_are_refused() -> None:
    for v in ({1, 2}, object(), {1: 2}, "\ud800"):
        with pytest.raises(CborError):
            cbor.dumps(v)


@settings(max_examples=500)
@given(st.binary(max_size=64))
def test_random_bytes_never_crash_or_hang(data: bytes) -> None:
    with contextlib.suppress(CborError):
        cbor.loads(data)


@settings(max_examples=300)
@given(values, st.data())
def test_corrupted_encodings_never_crash(v: object, data: st.DataObject) -> None:
    raw = bytearray(cbor2.dumps(v))
    i = data.draw(st.integers(0, len(raw) - 1))
    raw[i] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(raw)))
    for candidate in (bytes(raw), bytes(raw[:cut])):
        with contextlib.suppress(CborError):
            cbor.loads(candidate)
