"""The JSON face of wk-workflow/v1: every route in JSON as well as CBOR, translated at
the front door, so the runner in the guest speaks CBOR alone.

A request to a protocol route (`/CLASS/ID/wk-workflow/v1/ROUTE`) whose Content-Type is
`application/json` has its JSON body turned into the CBOR the runner reads; an answer
goes back as JSON when the request's Accept names `application/json` (or, with no
Accept, when the request was JSON). Held answers are turned when they are sent.

The JSON subset, which carries every value the CBOR one does and round-trips with it
and with the runner's stored format (docs/workflow-protocol.md, "JSON"):

    null, true, false, text, arrays, maps with text keys   as themselves
    an integer within ±(2^53 - 1)                           a JSON number
    a float that is finite                                  a JSON number (with a point
                                                            or an exponent, so a reader
                                                            that keeps the two apart can)
    "\\u0000i" + decimal digits                              an integer past 2^53 (to
                                                            2^64), which a JSON reader
                                                            of doubles would round
    "\\u0000f" + "nan" | "inf" | "-inf"                      a float JSON has no number for
    "\\u0000b" + base64 (standard, padded)                   bytes
    "\\u0000s" + text                                        a text that itself starts
                                                            with U+0000

A text that starts with U+0000 is always a tag (as in the stored format); an unknown
tag, NaN or Infinity as bare JSON, or a body that is not JSON is refused: 400, in the
protocol's refusal form, `{"error": "bad-request", "message": ...}`.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from typing import Any

import cbor2

JSON = "application/json"
CBOR = "application/cbor"
_PROTOCOL = "/wk-workflow/v1/"
_SAFE = 2**53 - 1
_INT_MAX, _INT_MIN = 2**64 - 1, -(2**64)
_NON_FINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}
MAX_DEPTH = 100


class NotInSubset(ValueError):
    """A JSON body outside the subset (or a CBOR answer with a value outside it)."""


def applies(path: str) -> bool:
    """Whether `path` (the actor's part, "/wk-workflow/v1/start") is a protocol route."""
    return path.startswith(_PROTOCOL)


def is_json(content_type: str | None) -> bool:
    return (content_type or "").split(";")[0].strip().lower() == JSON


def answers_json(accept: str | None, request_json: bool) -> bool:
    """Whether the answer goes back as JSON: Accept names it (before CBOR, if both), or
    names neither (none, `*/*` as curl sends) and the request was JSON."""
    kinds = [part.split(";")[0].strip().lower() for part in (accept or "").split(",")]
    if JSON in kinds:
        return CBOR not in kinds or kinds.index(JSON) < kinds.index(CBOR)
    return request_json and CBOR not in kinds


class Face:
    """One request's use of the JSON face: whether its body is JSON, whether its answer
    goes back as JSON (`of` is None when neither)."""

    __slots__ = ("request_json", "answer_json")

    def __init__(self, request_json: bool, answer_json: bool) -> None:
        self.request_json, self.answer_json = request_json, answer_json

    @classmethod
    def of(cls, path: str, content_type: str | None, accept: str | None) -> Face | None:
        if not applies(path):
            return None
        request_json = is_json(content_type)
        answer_json = answers_json(accept, request_json)
        return cls(request_json, answer_json) if request_json or answer_json else None

    def request(self, headers: list[tuple[str, str]], body: bytes
                ) -> tuple[list[tuple[str, str]], bytes]:
        """The headers and body the runner gets. Raises NotInSubset (a 400)."""
        if not self.request_json:
            return headers, body
        return ([(k, v) for k, v in headers if k != "content-type"]
                + [("content-type", CBOR)], request_body(body))

    def answer(self, status: int, headers: list[tuple[str, str]], body: bytes
               ) -> tuple[list[tuple[str, str]], bytes]:
        """The answer's headers and body as the client gets them: a runner's CBOR map
        as JSON if asked; the host's own answers (plain text) as they are."""
        cbor_answer = any(k.lower() == "content-type" and v.split(";")[0].strip() == CBOR
                          for k, v in headers)
        if not (self.answer_json and cbor_answer):
            return headers, body
        try:
            out = answer_body(body)
        except NotInSubset as e:  # the runner answered what JSON cannot carry
            return [("content-type", JSON)], to_json(
                {"error": "not-json", "message": str(e)})
        return ([(k, v) for k, v in headers if k.lower() != "content-type"]
                + [("content-type", JSON)], out)


def refusal(message: str) -> bytes:
    """The protocol's refusal form, in JSON (a body outside the subset: a 400)."""
    return to_json({"error": "bad-request", "message": message})


# -- values ---------------------------------------------------------------------------

def from_json(text: bytes) -> Any:
    """A JSON body → its value (the tags read). Raises NotInSubset."""
    try:
        doc = json.loads(text, parse_constant=_no_constant)
    except (ValueError, UnicodeDecodeError) as e:
        raise NotInSubset(f"the body is not JSON: {e}") from None
    return _revive(doc, 0)


def to_json(value: Any) -> bytes:
    """A value of the subset → its JSON (tagged where JSON has no form). Raises
    NotInSubset."""
    return json.dumps(_tag(value, 0), ensure_ascii=False, separators=(",", ":"),
                      allow_nan=False).encode()


def request_body(body: bytes) -> bytes:
    """A JSON request's body as the CBOR the runner reads (an empty body stays empty)."""
    return b"" if not body.strip() else cbor2.dumps(from_json(body))


def answer_body(body: bytes) -> bytes:
    """A runner's CBOR answer as JSON. Raises NotInSubset (not CBOR, or not the subset)."""
    try:
        doc = cbor2.loads(body)
    except (cbor2.CBORDecodeError, ValueError, EOFError) as e:
        raise NotInSubset(f"the runner's answer is not CBOR: {e}") from None
    return to_json(doc)


def _no_constant(name: str) -> Any:
    raise NotInSubset(f"{name} is not JSON: send \"\\u0000f{name.lower()[:4]}\" (the "
                      "subset's tag for a float JSON has no number for)")


def _revive(v: Any, depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise NotInSubset(f"the value nests deeper than {MAX_DEPTH}")
    t = type(v)
    if t is str:
        return _untag(v) if v.startswith("\x00") else v
    if t is list:
        return [_revive(x, depth + 1) for x in v]
    if t is dict:
        return {k: _revive(x, depth + 1) for k, x in v.items()}
    if t is int and not _INT_MIN <= v <= _INT_MAX:
        raise NotInSubset(f"the integer {v} is outside the subset (±2^64)")
    return v


def _untag(s: str) -> Any:
    tag, body = s[1:2], s[2:]
    if tag == "s":
        return body
    if tag == "b":
        try:
            return base64.b64decode(body, validate=True)
        except (binascii.Error, ValueError):
            raise NotInSubset(f"a bytes tag holds no base64: {body[:40]!r}") from None
    if tag == "i" and body.lstrip("-").isdigit() and body.isascii():
        n = int(body)
        if _INT_MIN <= n <= _INT_MAX:
            return n
    if tag == "f" and body in _NON_FINITE:
        return _NON_FINITE[body]
    raise NotInSubset(f"unknown tag {s[:12]!r}: a text that starts with U+0000 is one of "
                      "the subset's tags (\\u0000b, \\u0000s, \\u0000i, \\u0000f)")


def _tag(v: Any, depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise NotInSubset(f"the value nests deeper than {MAX_DEPTH}")
    t = type(v)
    if v is None or t is bool:
        return v
    if t is int:
        return v if -_SAFE <= v <= _SAFE else f"\x00i{v}"
    if t is float:
        if math.isfinite(v):
            return v
        return "\x00f" + ("nan" if math.isnan(v) else "inf" if v > 0 else "-inf")
    if t is str:
        return "\x00s" + v if v.startswith("\x00") else v
    if t in (bytes, bytearray):
        return "\x00b" + base64.b64encode(bytes(v)).decode()
    if t in (list, tuple):
        return [_tag(x, depth + 1) for x in v]
    if t is dict:
        if not all(type(k) is str for k in v):
            raise NotInSubset("a map's keys must be text")
        return {k: _tag(x, depth + 1) for k, x in v.items()}
    raise NotInSubset(f"a {t.__name__} is outside the subset")
