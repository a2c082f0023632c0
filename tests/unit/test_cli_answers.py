"""How `wkhost call` shows an answer on a terminal (host/cli/main.py `readable_body`), case by
case; tests/e2e/test_cli_contract.py runs the same through a real server and a pty."""

from __future__ import annotations

import json

import cbor2
from wkhost.cli.call import readable_body


def test_text_and_json_are_shown_as_they_came() -> None:
    assert readable_body("héllo\xa0wörld\n".encode(), "text/plain; charset=utf-8") == \
        "héllo\xa0wörld\n"
    assert readable_body("café".encode("latin-1"), "text/plain; charset=latin-1") == "café"
    assert readable_body(b'{"a": 1}', "application/json") == '{"a": 1}'
    assert readable_body(b"tab\tand\r\nlines", "") == "tab\tand\r\nlines"  # no type: text


def test_cbor_is_decoded_to_indented_json() -> None:
    shown = readable_body(cbor2.dumps({"state": "running", "raw": b"\x01\x02", 7: [None]}),
                          "application/cbor")
    assert json.loads(shown) == {"state": "running", "raw": "h'0102'", "7": [None]}
    assert shown.startswith('{\n  "')
    tagged = readable_body(cbor2.dumps(cbor2.CBORTag(4000, "x")), "application/x+cbor")
    assert json.loads(tagged) == {"tag 4000": "x"}


def test_what_cannot_be_shown_is_described() -> None:
    note = "not shown on a terminal; --raw prints them, -o FILE saves them>"
    assert readable_body(bytes(10), "application/octet-stream") == \
        f"<10 bytes of application/octet-stream: {note}"
    assert readable_body(b"\x1b[2Jgone", "text/plain") == f"<8 bytes of text/plain: {note}"
    assert readable_body(b"\xff\xfe", "") == f"<2 bytes of an unnamed type: {note}"
    assert readable_body(b"\xa1", "application/cbor") == f"<1 byte of application/cbor: {note}"
    assert readable_body(cbor2.dumps(1) + b"more", "application/cbor").startswith("<5 bytes")
