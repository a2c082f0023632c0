"""host/wire.py's checks on an answer before a client gets it, and the one hop-by-hop
set of the front door and the processes."""

from __future__ import annotations

import pytest
from wkhost import wire
from wkhost.errors import GuestFailed
from wkhost.net import forward
from wkhost.wire import HOP_BY_HOP, answer_headers


def check(status: int = 200, headers: list[tuple[str, str]] | None = None,
          max_headers: int = 100, max_bytes: int = 64 << 10) -> list[tuple[str, str]]:
    return answer_headers(status, headers or [], max_headers, max_bytes)


@pytest.mark.parametrize("status", [100, 101, 103, 199, 600, 0, -1, 999, 65535])
def test_only_final_statuses_pass(status: int) -> None:
    with pytest.raises(GuestFailed, match=rf"status {status} is not a final HTTP status"):
        check(status)


@pytest.mark.parametrize("status", [200, 204, 304, 418, 599])
def test_final_statuses_pass(status: int) -> None:
    assert check(status, [("x-a", "1")]) == [("x-a", "1")]


@pytest.mark.parametrize("name", ["", "bad name", "Set-Cookie: pwn=1; X", "connection:",
                                  "x-a\r\nInjected", "x\n", "x\x00", "caf\u00e9", "a\tb",
                                  "(x)", "x/y", "x@y", "[x]", "{x}", "x=y", "x;y", '"x"',
                                  "x,y", "x?", "x\\y"])
def test_a_name_that_is_not_a_token_is_refused(name: str) -> None:
    with pytest.raises(GuestFailed, match="is not an HTTP token"):
        check(headers=[(name, "v")])


def test_every_tchar_is_a_token() -> None:
    name = "!#$%&'*+-.^_`|~09azAZ"
    assert check(headers=[(name, "v")]) == [(name, "v")]


@pytest.mark.parametrize("value", ["a\rb", "a\nb", "a\x00b", "\x01", "\x1f", "\x7f",
                                   "a\x0bb", "\udc80"])
def test_a_value_with_a_control_character_is_refused(value: str) -> None:
    with pytest.raises(GuestFailed, match="control character"):
        check(headers=[("x-v", value)])


@pytest.mark.parametrize("value", ["", " ", "a\tb", "caf\u00e9", "\U0001f980", "a" * 1000])
def test_visible_text_spaces_and_tabs_pass(value: str) -> None:
    assert check(headers=[("x-v", value)]) == [("x-v", value)]


def test_the_count_cap_counts_every_header_on_the_wire() -> None:
    room = 100 - len(wire.SERVER_HEADERS)  # the front door's own are on the wire too
    assert len(check(headers=[("x", "v")] * room)) == room
    with pytest.raises(GuestFailed, match="101 headers on the wire.*over the cap of 100"):
        check(headers=[("x", "v")] * (room + 1))
    # Hop-by-hop ones are not (tests/unit/test_header_edges.py holds the rest).
    only = [("connection", "x"), ("te", "x"), ("x", "v")]
    assert check(headers=only, max_headers=1 + len(wire.SERVER_HEADERS)) == [("x", "v")]


def test_the_size_cap_counts_names_values_and_framing_in_utf8() -> None:
    # "x: " + value + CRLF: 1 + 2 + len + 2 on the wire, beside the front door's own.
    cap = 100 + sum(len(n) + most + 4 for n, most in wire.SERVER_HEADERS.items())
    assert check(headers=[("x", "v" * 95)], max_bytes=cap)
    with pytest.raises(GuestFailed, match=f"{cap + 1} bytes on the wire.*over the cap of "
                                          f"{cap}"):
        check(headers=[("x", "v" * 96)], max_bytes=cap)
    with pytest.raises(GuestFailed, match="over the cap"):  # é is two bytes
        check(headers=[("x", "\u00e9" * 48)], max_bytes=cap)


def test_hop_by_hop_names_are_dropped_in_any_case_and_only_exactly() -> None:
    headers = [("Connection", "close"), ("TRANSFER-ENCODING", "chunked"), ("te", "x"),
               ("Keep-Alive", "1"), ("Content-Length", "9"), ("x-connection", "kept"),
               ("connections", "kept"), ("Upgrade", "h2c"), ("Trailer", "x")]
    assert check(headers=headers) == [("x-connection", "kept"), ("connections", "kept")]


def test_the_front_door_and_the_processes_share_one_hop_by_hop_set() -> None:
    from wkhost.net import frontdoor

    assert not hasattr(frontdoor, "_HOP_BY_HOP") and not hasattr(forward, "_HOP_BY_HOP")
    assert forward.HOP_BY_HOP is wire.HOP_BY_HOP
    assert {"connection", "transfer-encoding", "content-length", "expect"} <= HOP_BY_HOP
    assert all(name == name.lower() for name in HOP_BY_HOP)


def test_a_refused_name_is_shown_on_one_short_line() -> None:
    with pytest.raises(GuestFailed) as e:
        check(headers=[("x\r\n" + "y" * 500, "v")])
    assert "\n" not in e.value.reason and len(e.value.reason) < 120
