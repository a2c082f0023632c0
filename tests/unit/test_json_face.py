"""The JSON face of wk-workflow/v1 (host/net/json_face.py): the shared vectors
(tests/vectors/json_face.json) both ways, the same values as the runner's stored format
keeps them, and what is refused."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import cbor2
import pytest
from wkguest.workflow.core.values import decode, encode
from wkhost.net.json_face import (
    Face,
    NotInSubset,
    answer_body,
    answers_json,
    from_json,
    request_body,
    to_json,
)

VECTORS = json.loads((Path(__file__).parents[1] / "vectors" / "json_face.json").read_text())
CASES = [(v["name"], bytes.fromhex(v["cbor"]), v["json"]) for v in VECTORS["vectors"]]


def same(a: Any, b: Any) -> bool:
    """Equal as values, NaN equal to NaN, bytes apart from text, ints apart from floats."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return bool(a == b)


@pytest.mark.parametrize(("name", "cbor", "text"), CASES, ids=[c[0] for c in CASES])
def test_each_vector_reads_the_same_both_ways(name: str, cbor: bytes, text: str) -> None:
    value = cbor2.loads(cbor)
    assert same(from_json(text.encode()), value)
    assert to_json(value).decode() == text
    assert same(cbor2.loads(request_body(text.encode())), value)
    assert answer_body(cbor).decode() == text
    stored, tagged = encode(value, 1 << 20)  # the runner's own form keeps it too
    assert same(decode(stored, tagged), value)


def test_the_vectors_cover_each_tag_and_the_edges() -> None:
    texts = " ".join(t for _, _, t in CASES)
    for tag in ("\\u0000b", "\\u0000s", "\\u0000i", "\\u0000f"):
        assert tag in texts
    assert '"\\u0000i9007199254740992"' in texts and "9007199254740991" in texts


@pytest.mark.parametrize("body", [b"NaN", b'{"x": Infinity}', b'"\\u0000q"', b'"\\u0000bnot*b64"',
                                  b'"\\u0000i12x"', b'"\\u0000i%d"' % 2**64, b"{", b"\xff",
                                  b"36893488147419103232"])
def test_what_is_outside_the_subset_is_refused(body: bytes) -> None:
    with pytest.raises(NotInSubset):
        from_json(body)


@pytest.mark.parametrize(("accept", "request_json", "answer_json"), [
    (None, True, True), (None, False, False), ("application/json", False, True),
    ("application/cbor", True, False), ("application/json, application/cbor", False, True),
    ("application/cbor, application/json", True, False), ("*/*", True, True),
    ("*/*", False, False)])
def test_the_answer_is_json_when_asked(accept: str | None, request_json: bool,
                                       answer_json: bool) -> None:
    assert answers_json(accept, request_json) is answer_json


def test_only_protocol_routes_have_a_face() -> None:
    assert Face.of("/wk-workflow/v1/start", "application/json", None) is not None
    assert Face.of("/orders", "application/json", None) is None
    assert Face.of("/wk-workflow/v1/start", "application/cbor", None) is None
