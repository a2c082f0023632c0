"""The front door against what a guest sends back and what a client does, on a real
`wkhost serve` (raw sockets where HTTP itself is the point).

- A guest's answer that HTTP cannot carry (a status outside 200..599, a header name that
  is not a token, a control character in a value, too many headers or too many bytes of
  them) is one 500 naming the problem: never a bare 1xx, never an empty reply, never a
  kept-alive connection out of step. Held answers, and answers passed on from another
  process (`--processes 2`), are checked the same way.
- Slow clients are cut off: a request head not whole within the header timeout, a body
  not whole within the body timeout (408), a connection idle past the keep-alive
  timeout. A declared body over the cap gets 413 before any of it is sent.
- A client's faults (malformed requests, hang-ups mid-body) are one line below error in
  the log, never a traceback.

Timeouts are set small here; the bounds below only stop a test that would hang.
"""

from __future__ import annotations

import contextlib
import json
import select
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from .conftest import MakeServer
from .reliability_support import Neighbour
from .server import Server

pytestmark = pytest.mark.e2e

# Long enough to stop a hung test, never a bound on how fast the host must be.
BOUND_S = 60.0


@pytest.fixture(scope="session")
def answers_wasm(build_guest: Any) -> Path:
    """tests/guests/answers.py: answers any status and headers it is told to."""
    path: Path = build_guest("answers")
    return path


def start(make_server: MakeServer, answers_wasm: Path, probe_wasm: Path,
          *extra: str) -> Server:
    return make_server(actors={"answers": answers_wasm, "probe": probe_wasm},
                       extra=list(extra))


def address(server: Server) -> tuple[str, int]:
    u = urlsplit(server.url)
    assert u.hostname and u.port
    return u.hostname, u.port


@contextlib.contextmanager
def connection(server: Server, timeout: float = BOUND_S) -> Iterator[socket.socket]:
    with socket.create_connection(address(server), timeout=timeout) as s:
        yield s


def answer_request(status: int, headers: list[list[str]], actor: str = "a",
                   close: bool = False) -> bytes:
    body = json.dumps(headers).encode()
    head = (f"POST /answers/{actor}/answer?status={status} HTTP/1.1\r\nHost: x\r\n"
            f"Content-Length: {len(body)}\r\n" + ("Connection: close\r\n" if close else ""))
    return head.encode() + b"\r\n" + body


class Answer:
    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status, self.headers, self.body = status, headers, body


def read_answer(f: Any) -> Answer:
    """One HTTP/1.1 answer from a socket's file: status line, headers, body (by its
    Content-Length; the front door always sends one, except for 204 and 304)."""
    line = f.readline()
    assert line.startswith(b"HTTP/1.1 "), line
    status = int(line.split(b" ", 2)[1])
    headers: dict[str, str] = {}
    while (h := f.readline()) not in (b"\r\n", b""):
        k, _, v = h.decode("latin-1").partition(":")
        headers[k.strip().lower()] = v.strip()
    length = int(headers.get("content-length", "0"))
    return Answer(status, headers, f.read(length) if length else b"")


def closed_by_server(s: socket.socket, deadline: float, dribble: bytes = b"") -> bool:
    """Whether the server closes `s` before `deadline`: reads, and sends `dribble` a
    byte at a time, as a slow client would, until the end of the stream."""
    s.settimeout(0.2)
    i = 0
    while time.monotonic() < deadline:
        try:
            if not s.recv(65536):
                return True
        except TimeoutError:
            pass
        except OSError:  # reset: closed too
            return True
        if i < len(dribble):
            try:
                s.send(dribble[i:i + 1])
            except OSError:
                return True
            i += 1
    return False


def dribble_until_closed(conns: list[socket.socket], dribbles: list[bytes],
                         deadline: float) -> list[int]:
    """Send each connection its `dribbles` a byte at a time, all at once, until the
    server has closed every one or `deadline`: the indexes of those still open."""
    left = dict(enumerate(conns))
    sent = 0
    while left and time.monotonic() < deadline:
        readable, _, _ = select.select(list(left.values()), [], [], 0.2)
        for i, s in list(left.items()):
            if s in readable:
                try:
                    if not s.recv(65536):
                        del left[i]
                except OSError:
                    del left[i]
            elif sent < len(dribbles[i]):
                try:
                    s.send(dribbles[i][sent:sent + 1])
                except OSError:
                    del left[i]
        sent += 1
    return sorted(left)


def one_line_500(a: Answer, *words: str) -> None:
    assert a.status == 500, (a.status, a.body)
    text = a.body.decode()
    assert text.endswith("\n") and text.count("\n") == 1, text
    assert "Traceback" not in text
    for w in words:
        assert w in text, (w, text)


# -- what a guest sends back: statuses -----------------------------------------------------

@pytest.mark.parametrize("status", [100, 101, 103, 199, 600, 0, 999, 65535])
def test_a_status_outside_200_to_599_is_one_500_with_a_reason(
        make_server: MakeServer, answers_wasm: Path, probe_wasm: Path, status: int) -> None:
    server = start(make_server, answers_wasm, probe_wasm)
    with connection(server) as s, s.makefile("rb") as f:
        s.sendall(answer_request(status, [], close=True))
        one_line_500(read_answer(f), f"status {status}", "200..599")


def test_a_status_a_guest_cannot_even_encode_is_a_500(
        make_server: MakeServer, answers_wasm: Path, probe_wasm: Path) -> None:
    """-1 does not fit the WIT u16: the guest traps in lowering it."""
    server = start(make_server, answers_wasm, probe_wasm)
    with connection(server) as s, s.makefile("rb") as f:
        s.sendall(answer_request(-1, [], close=True))
        a = read_answer(f)
    assert a.status == 500 and a.body.count(b"\n") == 1, a.body


def test_pipelined_answers_stay_in_step_around_a_bad_status(
        make_server: MakeServer, answers_wasm: Path, probe_wasm: Path) -> None:
    """On one kept-alive connection, each request gets its own answer, in order: a bad
    status is a 500 and the next request's answer is its own."""
    server = start(make_server, answers_wasm, probe_wasm)
    statuses = [201, 101, 202, 103, 204, 100, 203]
    with connection(server) as s, s.makefile("rb") as f:
        s.sendall(b"".join(answer_request(st, [["x-asked", str(st)]]) for st in statuses))
        for st in statuses:
            a = read_answer(f)
            if 200 <= st <= 599:
                assert a.status == st and a.headers["x-asked"] == str(st), (st, a.status)
            else:
                one_line_500(a, f"status {st}")
        # The connection still serves.
        s.sendall(answer_request(200, [["x-last", "yes"]]))
        assert read_answer(f).headers["x-last"] == "yes"


# -- what a guest sends back: headers ------------------------------------------------------

BAD_HEADERS = {
    "a colon in the name": ([["Set-Cookie: pwn=1; X", "v"]], "not an HTTP token"),
    "a space in the name": ([["bad name", "v"]], "not an HTTP token"),
    "the empty name": ([["", "v"]], "not an HTTP token"),
    "CR LF in the name": ([["x-a\r\nInjected", "v"]], "not an HTTP token"),
    "LF in the name": ([["x-a\nInjected", "v"]], "not an HTTP token"),
    "a hop-by-hop name with a colon": ([["connection:", "close"]], "not an HTTP token"),
    "a hop-by-hop name with a space": ([["content-length ", "0"]], "not an HTTP token"),
    "a non-ASCII name": ([["x-\u00e9", "v"]], "not an HTTP token"),
    "CR LF in a value": ([["x-b", "a\r\nInjected: 1"]], "control character"),
    "LF in a value": ([["x-b", "a\nb"]], "control character"),
    "NUL in a value": ([["x-b", "a\x00b"]], "control character"),
    "SOH in a value": ([["x-b", "a\x01b"]], "control character"),
    "DEL in a value": ([["x-b", "a\x7fb"]], "control character"),
    "too many headers": ([[f"x-{i}", "v"] for i in range(101)], "over the cap of 99"),
    "too many bytes": ([["x-big", "v" * (64 << 10)]], "over the cap of 65536"),
}


def test_bad_response_headers_are_one_500_naming_the_problem(
        make_server: MakeServer, answers_wasm: Path, probe_wasm: Path) -> None:
    server = start(make_server, answers_wasm, probe_wasm)
    with connection(server) as s, s.makefile("rb") as f:
        for what, (headers, reason) in BAD_HEADERS.items():
            s.sendall(answer_request(200, headers))  # all on one kept-alive connection
            a = read_answer(f)
            assert a.status == 500, (what, a.status, a.headers)
            assert reason in a.body.decode(), (what, a.body)
            assert "injected" not in a.headers and "set-cookie" not in a.headers, what
    assert server.proc is not None and server.proc.poll() is None


def test_good_headers_pass_and_hop_by_hop_ones_are_dropped_whatever_their_case(
        make_server: MakeServer, answers_wasm: Path, probe_wasm: Path) -> None:
    server = start(make_server, answers_wasm, probe_wasm)
    headers = [["X-Kept", "a\tb c \u00e9"], ["set-cookie", "s=1; Path=/"],
               ["CONNECTION", "close"], ["Transfer-Encoding", "chunked"],
               ["Keep-Alive", "timeout=1"], ["Upgrade", "h2c"], ["Content-Length", "99"],
               ["x-also", ""]]
    fill = [[f"x-{i}", "v"] for i in range(99 - len(headers))]
    headers += fill  # exactly the cap on the wire: 94 kept, and the front door's 5
    with connection(server) as s, s.makefile("rb") as f:
        s.sendall(answer_request(200, headers))
        a = read_answer(f)
        assert a.status == 200 and a.body == b"answer 200\n", (a.status, a.body)
        assert a.headers["x-kept"] == "a\tb c \u00e9".encode().decode("latin-1")
        assert a.headers["set-cookie"] == "s=1; Path=/" and a.headers[fill[-1][0]] == "v"
        assert "upgrade" not in a.headers and "keep-alive" not in a.headers
        assert "transfer-encoding" not in a.headers and a.headers["content-length"] == "11"
        s.sendall(answer_request(200, [["x-next", "1"]]))  # the connection was kept
        assert read_answer(f).headers["x-next"] == "1"


def test_sixteen_headers_of_a_mebibyte_are_one_500_not_16_mib_sent(
        make_server: MakeServer, answers_wasm: Path, probe_wasm: Path) -> None:
    server = start(make_server, answers_wasm, probe_wasm)
    status, _, body = server.request("GET", "/answers/a/many?n=16&kb=1024")
    assert status == 500 and b"over the cap of 65536" in body and len(body) < 200, body


def test_the_header_caps_are_the_operators(
        make_server: MakeServer, answers_wasm: Path, probe_wasm: Path) -> None:
    # 3 of the guest's and the 5 the front door may add (host/wire.py's SERVER_HEADERS).
    server = start(make_server, answers_wasm, probe_wasm, "--max-response-headers", "8",
                   "--max-response-header-kb", "1")
    assert server.request("GET", "/answers/a/many?n=3&kb=0")[0] == 200
    status, _, body = server.request("GET", "/answers/a/many?n=4&kb=0")
    assert status == 500 and b"9 headers on the wire" in body, body
    assert b"over the cap of 8" in body, body
    status, _, body = server.request("GET", "/answers/a/many?n=1&kb=1")
    assert status == 500 and b"over the cap of 1024" in body, body


def test_a_held_answer_is_checked_before_it_is_held(
        make_server: MakeServer, answers_wasm: Path, probe_wasm: Path) -> None:
    """A bad answer that asks to be held is refused at once, and not held: the client
    does not wait out the hold for a 500."""
    server = start(make_server, answers_wasm, probe_wasm)
    body = json.dumps([["wk-hold-ms", "120000"], ["bad name", "v"]]).encode()
    status, _, got = server.request("POST", "/answers/h/answer", body, timeout=BOUND_S)
    assert status == 500 and b"not an HTTP token" in got, got
    _, _, health = server.request("GET", "/_wk/health")
    assert json.loads(health)["requests_held"] == 0


def test_an_answer_to_a_request_delivered_again_is_checked_too(
        make_server: MakeServer, answers_wasm: Path, probe_wasm: Path) -> None:
    """A held request delivered again (its actor had another event) whose new answer is
    bad gets the 500, not the held answer and not a bare 1xx."""
    server = start(make_server, answers_wasm, probe_wasm)
    body = json.dumps({"headers": [["wk-hold-ms", "120000"], ["wk-hold-state", "1"]],
                       "again": {"status": 101, "headers": []}}).encode()
    got: list[tuple[int, bytes]] = []
    held = threading.Thread(target=lambda: got.append(server.request(
        "POST", "/answers/h2/answer", body, timeout=BOUND_S)[::2]))
    held.start()
    end = time.monotonic() + BOUND_S
    while time.monotonic() < end:
        if json.loads(server.request("GET", "/_wk/health")[2])["requests_held"] == 1:
            break
        time.sleep(0.05)
    assert server.request("GET", "/answers/h2/other")[0] == 200  # the actor's next event
    held.join(BOUND_S)
    assert got and got[0][0] == 500 and b"status 101" in got[0][1], got


def test_with_two_processes_a_bad_answer_is_a_500_whichever_process_takes_it(
        make_server: MakeServer, answers_wasm: Path, probe_wasm: Path) -> None:
    """Ids of both processes, each asked several times over new connections, so that both
    the owner and the process that passes the request on answer some of them."""
    server = start(make_server, answers_wasm, probe_wasm, "--processes", "2")
    for actor in ("a", "b", "c", "d"):  # both processes own some of these
        for _ in range(4):
            for request, reason in ((answer_request(101, [], actor, close=True), "status 101"),
                                    (answer_request(200, [["x-a\r\nB", "v"]], actor, close=True),
                                     "not an HTTP token")):
                with connection(server) as s, s.makefile("rb") as f:
                    s.sendall(request)
                    one_line_500(read_answer(f), reason)
            with connection(server) as s, s.makefile("rb") as f:
                s.sendall(answer_request(200, [["x-fine", "1"]], actor, close=True))
                a = read_answer(f)
                assert a.status == 200 and a.headers["x-fine"] == "1", (actor, a.status)



def test_a_guest_cannot_pass_its_answer_off_as_a_host_error(
        make_server: MakeServer, answers_wasm: Path, probe_wasm: Path) -> None:
    """`wk-error-kind` is the host's (host/wire.py's HOST_ONLY): a guest's, in any case, is
    dropped, by the process that owns the actor and by the one that passes it on."""
    server = start(make_server, answers_wasm, probe_wasm, "--processes", "2")
    for actor in ("a", "b", "c", "d"):  # both processes own some of these
        for _ in range(3):
            forged = [["wk-error-kind", "NotThatProtocol"], ["WK-Error-Kind", "UnknownClass"],
                      ["x-fine", "1"]]
            with connection(server) as s, s.makefile("rb") as f:
                s.sendall(answer_request(404, forged, actor, close=True))
                a = read_answer(f)
            assert a.status == 404 and a.headers["x-fine"] == "1", (actor, a.status)
            assert "wk-error-kind" not in a.headers, (actor, a.headers)

# -- slow clients --------------------------------------------------------------------------

SLOW_HEAD = b"GET /probe/slow/now HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"s" * 4000


def test_slowloris_connections_are_closed_at_the_header_timeout(
        make_server: MakeServer, answers_wasm: Path, probe_wasm: Path) -> None:
    """40 connections dribble a request head a byte at a time; 10 more send nothing.
    The keep-alive timeout is long, so only the header timeout can close them; the
    neighbour is answered meanwhile."""
    server = start(make_server, answers_wasm, probe_wasm, "--header-timeout-s", "2",
                   "--keepalive-timeout-s", "600")
    conns = [socket.create_connection(address(server), timeout=BOUND_S) for _ in range(50)]
    try:
        with Neighbour(server, timeout=BOUND_S) as healthy:
            dribbles = [SLOW_HEAD] * 40 + [b""] * 10
            still_open = dribble_until_closed(conns, dribbles, time.monotonic() + BOUND_S)
        healthy.check()
        assert not still_open, f"{len(still_open)} of 50 slow connections still open"
    finally:
        for s in conns:
            s.close()
    assert server.request("GET", "/probe/slow/now")[0] == 200


def test_a_later_request_on_a_kept_alive_connection_gets_the_header_timeout_from_its_first_byte(
        make_server: MakeServer, answers_wasm: Path, probe_wasm: Path) -> None:
    """Idle between requests for longer than the header timeout is the keep-alive
    timeout's business: the next request is served."""
    server = start(make_server, answers_wasm, probe_wasm, "--header-timeout-s", "1",
                   "--keepalive-timeout-s", "600")
    with connection(server) as s, s.makefile("rb") as f:
        s.sendall(b"GET /probe/k/now HTTP/1.1\r\nHost: x\r\n\r\n")
        assert read_answer(f).status == 200
        time.sleep(2.5)  # idle: more than the header timeout, less than the keep-alive one
        s.sendall(b"GET /probe/k/now HTTP/1.1\r\nHost: x\r\n\r\n")
        assert read_answer(f).status == 200


def test_an_idle_kept_alive_connection_is_closed_at_the_keepalive_timeout(
        make_server: MakeServer, answers_wasm: Path, probe_wasm: Path) -> None:
    server = start(make_server, answers_wasm, probe_wasm, "--keepalive-timeout-s", "1",
                   "--header-timeout-s", "600")
    with connection(server) as s, s.makefile("rb") as f:
        s.sendall(b"GET /probe/k/now HTTP/1.1\r\nHost: x\r\n\r\n")
        assert read_answer(f).status == 200
        assert closed_by_server(s, time.monotonic() + BOUND_S)


def test_a_body_slower_than_the_body_timeout_gets_408_and_its_connection_closed(
        make_server: MakeServer, answers_wasm: Path, probe_wasm: Path) -> None:
    server = start(make_server, answers_wasm, probe_wasm, "--body-timeout-s", "1")
    head = b"POST /probe/b/echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n"
    with Neighbour(server, timeout=BOUND_S) as healthy, connection(server) as s:
        s.sendall(head + b"x")
        s.settimeout(BOUND_S)
        first = b""
        end = time.monotonic() + BOUND_S
        while b"\r\n\r\n" not in first and time.monotonic() < end:
            s.send(b"x")  # a byte now and then: never the whole body in time
            s.settimeout(0.2)
            with contextlib.suppress(TimeoutError):
                first += s.recv(65536)
        assert first.startswith(b"HTTP/1.1 408 "), first[:200]
        assert b"Connection: close" in first and b"did not arrive within 1 s" in first
        # aiohttp reads and drops what still comes for a while, then closes.
        assert closed_by_server(s, time.monotonic() + BOUND_S, b"x" * 1000)
    healthy.check()


def test_a_declared_body_over_the_cap_gets_413_before_any_of_it_is_sent(
        make_server: MakeServer, answers_wasm: Path, probe_wasm: Path) -> None:
    server = start(make_server, answers_wasm, probe_wasm)
    for extra in (b"", b"Expect: 100-continue\r\n"):
        with connection(server) as s, s.makefile("rb") as f:
            s.sendall(b"POST /probe/big/echo HTTP/1.1\r\nHost: x\r\n"
                      b"Content-Length: 104857600\r\n" + extra + b"\r\n")
            a = read_answer(f)  # no body sent, and none expected: the 413 comes first
            assert a.status == 413, (extra, a.status, a.body)
            assert b"104857600 bytes declared" in a.body and a.headers["connection"] == "close"
    # Under the cap, with Expect, the client is still asked to send it.
    with connection(server) as s, s.makefile("rb") as f:
        s.sendall(b"POST /probe/big/echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n"
                  b"Expect: 100-continue\r\n\r\n")
        assert f.readline().startswith(b"HTTP/1.1 100 ") and f.readline() == b"\r\n"
        s.sendall(b"abc")
        a = read_answer(f)
        assert a.status == 200 and a.body == b"abc"


# -- the log -------------------------------------------------------------------------------

MALFORMED = {
    "garbage request line": b"HELLO WORLD\r\n\r\n",
    "binary garbage": bytes(range(256)) * 4,
    "bad version": b"GET /probe/a/now HTTP/7.3\r\nHost: x\r\n\r\n",
    "header without colon": b"GET /probe/a/now HTTP/1.1\r\nHost x\r\n\r\n",
    "NUL in a header": b"GET /probe/a/now HTTP/1.1\r\nHost: x\r\nX-A: a\x00b\r\n\r\n",
    "oversized header": b"GET /probe/a/now HTTP/1.1\r\nHost: x\r\nX-B: " + b"b" * 20_000
                        + b"\r\n\r\n",
    "two content lengths": (b"POST /probe/a/echo HTTP/1.1\r\nHost: x\r\n"
                            b"Content-Length: 3\r\nContent-Length: 5\r\n\r\nabcde"),
    "bad chunk size": (b"POST /probe/a/echo HTTP/1.1\r\nHost: x\r\n"
                       b"Transfer-Encoding: chunked\r\n\r\nZZ\r\nabc\r\n0\r\n\r\n"),
    "bad chunk after a good one": (b"POST /probe/a/echo HTTP/1.1\r\nHost: x\r\n"
                                   b"Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\nQQ\r\n"),
}


def test_client_faults_are_one_line_below_error_never_a_traceback(
        make_server: MakeServer, answers_wasm: Path, probe_wasm: Path) -> None:
    server = start(make_server, answers_wasm, probe_wasm)
    for data in MALFORMED.values():
        with connection(server, timeout=10) as s:
            s.sendall(data)
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_WR)
                while s.recv(65536):
                    pass
    hangups = 5
    for _ in range(hangups):  # the client goes in the middle of its body
        with connection(server) as s:
            s.sendall(b"POST /probe/hangup/echo HTTP/1.1\r\nHost: x\r\n"
                      b"Content-Length: 1000\r\n\r\nonly a part")
            time.sleep(0.2)

    def hung_up(log: list[str]) -> list[str]:
        return [line for line in log if "/probe/hangup/echo" in line]

    end = time.monotonic() + BOUND_S
    while time.monotonic() < end and len(hung_up(server.log)) < hangups:
        time.sleep(0.05)
    assert server.request("GET", "/probe/a/now")[0] == 200
    log = list(server.log)
    lines = hung_up(log)
    assert len(lines) == hangups, lines  # one line each
    assert all("level=info" in line and "did not arrive whole" in line for line in lines)
    bad = [line for line in log if "level=error" in line or "level=critical" in line
           or "Traceback" in line or ' exc="' in line]
    assert not bad, bad[:3]
    # aiohttp's "Error handling request" (the chunk errors), as one info line each.
    handled = [line for line in log if "Error handling request" in line]
    assert handled and all("level=info" in line for line in handled), handled
