"""Header caps and control characters where a guest's headers leave the host (issue 36,
item 7): the caps on an answer count what goes on the wire, the front door's own headers
among them (host/wire.py), and no header value a guest sends out, in an answer or in a
fetch (host/fetch/transport.py), holds a C0 or C1 control character but tab.

tests/unit/test_response_checks.py holds the other answer checks; tests/e2e/
test_header_wire.py reads real answers with Python's http.client."""

from __future__ import annotations

import socket
import time

import pytest
from aiohttp.http import SERVER_SOFTWARE
from wkhost import wire
from wkhost.errors import GuestFailed
from wkhost.fetch import FetchError, FetchPolicy, FetchRequest, fetch
from wkhost.wire import answer_headers

ADDED = len(wire.SERVER_HEADERS)  # the front door's own, when the answer sets none


def check(headers: list[tuple[str, str]], max_headers: int = 100,
          max_bytes: int = 64 << 10) -> list[tuple[str, str]]:
    return answer_headers(200, headers, max_headers, max_bytes)


def fill(n: int) -> list[tuple[str, str]]:
    return [(f"x-{i}", "v") for i in range(n)]


# -- the caps count the wire ---------------------------------------------------------------
def test_the_count_cap_leaves_room_for_the_front_doors_own_headers() -> None:
    """At exactly 100 headers of a guest's, the wire carried 104 (and 105 when the
    connection closes), which Python's http.client refuses."""
    assert len(check(fill(100 - ADDED))) == 100 - ADDED
    with pytest.raises(GuestFailed, match=rf"{100 + 1} headers on the wire "
                                          rf"\({101 - ADDED} of its own and {ADDED} the "
                                          r"server adds\), over the cap of 100"):
        check(fill(101 - ADDED))
    with pytest.raises(GuestFailed, match="over the cap of 100"):
        check(fill(100))


def test_headers_the_answer_sets_itself_are_not_counted_twice() -> None:
    """Its own Content-Type, Date and Server stand for the front door's; a hop-by-hop one
    is dropped, and Content-Length and Connection are the front door's whatever it set.
    (The answer's list as written is capped too, before any work per header.)"""
    own = [("Content-Type", "text/plain"), ("date", "x"), ("SERVER", "me")]
    room = 100 - (ADDED - len(own))
    assert len(check(own + fill(room - len(own)))) == room
    with pytest.raises(GuestFailed, match="101 headers on the wire"):
        check(own + fill(room - len(own) + 1))
    dropped = [("Content-Length", "9"), ("connection", "close"), ("te", "x")]
    assert len(check(dropped + fill(100 - ADDED))) == 100 - ADDED
    with pytest.raises(GuestFailed, match="101 headers on the wire"):
        check(dropped + fill(101 - ADDED))


def test_the_size_cap_counts_the_front_doors_own_headers_at_their_largest() -> None:
    reserve = sum(len(n) + most + 4 for n, most in wire.SERVER_HEADERS.items())
    cap = 1000
    room = cap - reserve - len("x: ") - len("\r\n")
    assert check([("x", "v" * room)], max_bytes=cap)
    with pytest.raises(GuestFailed, match=rf"{cap + 1} bytes on the wire.*over the cap of "
                                          rf"{cap}"):
        check([("x", "v" * (room + 1))], max_bytes=cap)


def test_the_reserve_holds_what_aiohttp_writes() -> None:
    """The Server value of this aiohttp, and a date: the largest of each is reserved."""
    assert len(SERVER_SOFTWARE) <= wire.SERVER_HEADERS["server"]
    assert len("Wed, 29 Sep 2026 10:10:10 GMT") <= wire.SERVER_HEADERS["date"]
    assert len(str(2**64)) <= wire.SERVER_HEADERS["content-length"]


# -- control characters: C0 and C1 alike ---------------------------------------------------
C1 = ["\x80", "a\x85b", "\x9b[31m", "\x9f", "a\u0085"]


@pytest.mark.parametrize("value", C1)
def test_an_answers_value_with_a_c1_control_is_refused(value: str) -> None:
    with pytest.raises(GuestFailed, match="control character"):
        check([("x-v", value)])


@pytest.mark.parametrize("value", ["\u00a0", "caf\u00e9", "\u00ff", "a\tb"])
def test_the_characters_around_c1_pass(value: str) -> None:
    assert check([("x-v", value)]) == [("x-v", value)]


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


@pytest.mark.parametrize("value", [*C1, "a\x01b", "\x0b", "\x1b[2J", "\x7f"])
def test_a_fetch_header_with_a_control_character_is_invalid_before_any_connection(
        value: str) -> None:
    """`invalid`, not `connect`: nothing listens on the port, so a request that got as
    far as connecting would fail otherwise."""
    port = _closed_port()
    policy = FetchPolicy.parse([f"127.0.0.1:{port}"])
    req = FetchRequest("GET", f"http://127.0.0.1:{port}/", [("x-v", value)])
    with pytest.raises(FetchError) as got:
        fetch(req, policy, time.monotonic() + 10)
    assert got.value.kind == "invalid" and "control character" in got.value.message, got.value


def test_a_fetch_heads_cap_counts_the_hosts_own_headers() -> None:
    """The request head is measured as written, Host, User-Agent and Connection in it:
    a guest's headers that fit alone but not with those are refused before connecting."""
    port = _closed_port()
    policy = FetchPolicy.parse([f"127.0.0.1:{port}"])
    line = "GET / HTTP/1.1\r\nx-v: \r\n\r\n"
    value = "v" * (64 * 1024 - len(line))  # the request line and this header: 64 KiB
    req = FetchRequest("GET", f"http://127.0.0.1:{port}/", [("x-v", value)])
    with pytest.raises(FetchError) as got:
        fetch(req, policy, time.monotonic() + 10)
    assert got.value.kind == "invalid" and "head is over" in got.value.message, got.value
