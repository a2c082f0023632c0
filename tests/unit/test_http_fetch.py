"""Outgoing HTTP (host/fetch/transport.py) against real sockets on 127.0.0.1 only.

Two guards are on in every test: real DNS is off (a name resolves only through the
`net.dns` table a test fills in; numeric hosts go through getaddrinfo with
AI_NUMERICHOST), and connecting to anything but loopback fails the test before a packet
leaves the machine. Every lookup and every connection attempt is recorded in `net`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import ipaddress
import json
import os
import shutil
import socket
import ssl
import struct
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, cast
from urllib.parse import parse_qs, quote, urlsplit

import pytest
from wkhost.fetch import FetchError, FetchPolicy, FetchRequest, FetchResponse, fetch

CAP = 1 << 20
PUBLIC_IP = "93.184.215.14"  # never reached: tests that resolve to it refuse the connect
_real_getaddrinfo = socket.getaddrinfo
_real_connect = socket.socket.connect


# ---------------------------------------------------------------------------- guards


@dataclass
class Net:
    dns: dict[str, list[str]] = field(default_factory=dict)
    lookups: list[str] = field(default_factory=list)
    connects: list[tuple[Any, ...]] = field(default_factory=list)
    refuse_all: bool = False  # record every connect, then fail it with ECONNREFUSED


@pytest.fixture(autouse=True)
def net(monkeypatch: pytest.MonkeyPatch) -> Net:
    state = Net()

    def fake_getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        state.lookups.append(host)
        if host in state.dns:
            return [_addrinfo(ip, port) for ip in state.dns[host]]
        try:  # numeric hosts only: this never asks a DNS server
            return _real_getaddrinfo(host, port, 0, socket.SOCK_STREAM, 0, socket.AI_NUMERICHOST)
        except socket.gaierror:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known") from None

    def guarded_connect(self: socket.socket, address: Any) -> None:
        state.connects.append(tuple(address))
        if state.refuse_all:
            raise ConnectionRefusedError(111, "Connection refused")
        if address[0] not in ("127.0.0.1", "::1"):
            raise AssertionError(f"a test tried to connect off the machine: {address}")
        _real_connect(self, address)

    monkeypatch.setattr(socket, "getaddrinfo", fake_getaddrinfo)
    monkeypatch.setattr(socket.socket, "connect", guarded_connect)
    return state


def _unwrapped(ip: str) -> str:
    """How the message shows `ip`: an IPv4 address carried in IPv6 as plain IPv4."""
    addr = ipaddress.ip_address(ip)
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped:
        return str(addr.ipv4_mapped)
    if addr in ipaddress.ip_network("64:ff9b::/96"):
        return str(ipaddress.IPv4Address(int(addr) & 0xFFFFFFFF))
    return str(addr)


def _addrinfo(ip: str, port: int) -> tuple[Any, ...]:
    if ":" in ip:
        return (socket.AF_INET6, socket.SOCK_STREAM, 6, "", (ip, port, 0, 0))
    return (socket.AF_INET, socket.SOCK_STREAM, 6, "", (ip, port))


# --------------------------------------------------------------------------- helpers


def go(
    url: str,
    policy: FetchPolicy,
    method: str = "GET",
    headers: list[tuple[str, str]] | None = None,
    body: bytes = b"",
    timeout_ms: int | None = None,
    deadline_s: float = 5.0,
) -> FetchResponse:
    req = FetchRequest(method, url, headers or [], body, timeout_ms)
    return fetch(req, policy, time.monotonic() + deadline_s)


def fails(kind: str, call: Callable[[], object]) -> str:
    """Run `call`, expect FetchError of `kind`, and return its one-line text."""
    with pytest.raises(FetchError) as info:
        call()
    err = info.value
    assert err.kind == kind, str(err)
    assert str(err) == f"{kind}: {err.message}"
    assert "\n" not in str(err) and "\r" not in str(err)
    return str(err)


def allow(*entries: str) -> FetchPolicy:
    return FetchPolicy.parse(entries)


# ------------------------------------------------------------------ a well-behaved server


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]  # lower-case names
    raw_headers: list[tuple[str, str]]
    body: bytes


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        items = list(self.headers.items())
        seen = Seen(self.command, self.path, {k.lower(): v for k, v in items}, items, body)
        self.server.seen.append(seen)
        url = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        if url.path == "/echo":
            self._reply(200, body, [("X-Method", self.command)])
        elif url.path == "/headers":
            self._reply(200, json.dumps(items).encode())
        elif url.path == "/big":
            n = int(query["n"])
            self._reply(200, (bytes(range(256)) * (n // 256 + 1))[:n])
        elif url.path == "/redirect":
            self._reply(int(query.get("code", "302")), b"moved", [("Location", query["to"])])
        elif url.path == "/loop":
            self._reply(302, b"", [("Location", "/loop")])
        else:
            self._reply(404, b"no such path")

    do_POST = do_PUT = do_DELETE = do_HEAD = do_GET

    def _reply(
        self, status: int, body: bytes, headers: list[tuple[str, str]] | None = None
    ) -> None:
        self.send_response(status)
        for name, value in headers or []:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        self.seen: list[Seen] = []
        super().__init__(("127.0.0.1", 0), _Handler)
        if tls is not None:
            self.socket = tls.wrap_socket(self.socket, server_side=True)

    def server_bind(self) -> None:
        # HTTPServer.server_bind calls getfqdn(), a reverse DNS lookup: skip it.
        self.socket.bind(self.server_address)
        self.server_address = self.socket.getsockname()
        self.server_name, self.server_port = "127.0.0.1", self.server_address[1]

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def policy(self) -> FetchPolicy:
        return allow(f"127.0.0.1:{self.port}")


def _serve(server: _Server) -> Iterator[_Server]:
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(2)


@pytest.fixture
def server() -> Iterator[_Server]:
    yield from _serve(_Server())


# ---------------------------------------------------------------- misbehaving servers

Script = Callable[[socket.socket, threading.Event], None]


class RawServer:
    """Runs `script(conn, stop)` on each accepted connection, each in its own thread."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.stop = threading.Event()
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(8)
        self.listener.settimeout(0.02)
        self.port = self.listener.getsockname()[1]
        self.workers: list[threading.Thread] = []
        self.thread = threading.Thread(target=self._accept_loop, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    @property
    def policy(self) -> FetchPolicy:
        return allow(f"127.0.0.1:{self.port}")

    def _accept_loop(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                continue
            worker = threading.Thread(target=self._run, args=(conn,), daemon=True)
            worker.start()
            self.workers.append(worker)

    def _run(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(3)
            # The client going away is expected in most of these tests.
            with contextlib.suppress(OSError):
                self.script(conn, self.stop)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(2)
        for worker in self.workers:
            worker.join(2)
        self.listener.close()


@pytest.fixture
def raw_server() -> Iterator[Callable[[Script], RawServer]]:
    started: list[RawServer] = []

    def start(script: Script) -> RawServer:
        started.append(RawServer(script))
        return started[-1]

    yield start
    for srv in started:
        srv.close()


def read_head(conn: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(4096)
        if not chunk:
            break
        data += chunk
    return data


def replies(*parts: bytes) -> Script:
    """A script that reads the request, sends `parts`, and closes."""

    def script(conn: socket.socket, stop: threading.Event) -> None:
        read_head(conn)
        for part in parts:
            conn.sendall(part)

    return script


def silent(conn: socket.socket, stop: threading.Event) -> None:
    read_head(conn)
    stop.wait(30)


def trickle(prefix: bytes, drip: bytes) -> Script:
    """Send `prefix`, then one byte of `drip` every 20 ms until stopped or done."""

    def script(conn: socket.socket, stop: threading.Event) -> None:
        read_head(conn)
        conn.sendall(prefix)
        for i in range(len(drip)):
            if stop.wait(0.02):
                return
            conn.sendall(drip[i : i + 1])

    return script


# ------------------------------------------------------------------------ round trips


def test_get_round_trip(server: _Server, net: Net) -> None:
    resp = go(f"{server.base}/echo?x=1", server.policy)
    assert resp.status == 200
    assert resp.body == b""
    assert ("x-method", "GET") in resp.headers
    assert all(name == name.lower() for name, _ in resp.headers)
    [seen] = server.seen
    assert seen.path == "/echo?x=1"
    assert seen.headers["host"] == f"127.0.0.1:{server.port}"
    assert seen.headers["connection"] == "close"
    assert seen.headers["user-agent"] == "wkhost"
    assert "content-length" not in seen.headers  # a GET without body declares none
    assert net.connects == [("127.0.0.1", server.port)]
    assert net.lookups == []  # an IP literal is never resolved


def test_post_round_trip(server: _Server) -> None:
    headers = [("Content-Type", "text/plain"), ("X-Custom", "1"), ("User-Agent", "guest/1")]
    resp = go(f"{server.base}/echo", server.policy, "POST", headers, b"hello")
    assert (resp.status, resp.body) == (200, b"hello")
    assert ("x-method", "POST") in resp.headers
    seen = server.seen[0]
    assert seen.headers["content-length"] == "5"
    assert seen.headers["content-type"] == "text/plain"
    assert seen.headers["x-custom"] == "1"
    assert [v for k, v in seen.raw_headers if k.lower() == "user-agent"] == ["guest/1"]


def test_empty_post_declares_zero_length(server: _Server) -> None:
    go(f"{server.base}/echo", server.policy, "POST")
    assert server.seen[0].headers["content-length"] == "0"


def test_host_owned_headers_are_dropped(server: _Server) -> None:
    sneaky = [
        ("Host", "evil.example"),
        ("Transfer-Encoding", "chunked"),
        ("Content-Length", "999"),
        ("Connection", "keep-alive"),
        ("Upgrade", "websocket"),
        ("X-Kept", "yes"),
    ]
    resp = go(f"{server.base}/echo", server.policy, "PUT", sneaky, b"abc")
    assert resp.body == b"abc"
    seen = server.seen[0]
    names = [k.lower() for k, _ in seen.raw_headers]
    assert names.count("host") == 1 and seen.headers["host"] == f"127.0.0.1:{server.port}"
    assert names.count("content-length") == 1 and seen.headers["content-length"] == "3"
    assert "transfer-encoding" not in names and "upgrade" not in names
    assert seen.headers["connection"] == "close"
    assert seen.headers["x-kept"] == "yes"


def test_one_mib_both_ways_intact(server: _Server) -> None:
    payload = os.urandom(CAP)
    resp = go(f"{server.base}/echo", server.policy, "POST", body=payload)
    assert resp.body == payload  # exactly at the cap is allowed
    resp = go(f"{server.base}/big?n={CAP}", server.policy)
    assert resp.body == (bytes(range(256)) * (CAP // 256))


def test_head_has_no_body(server: _Server) -> None:
    resp = go(f"{server.base}/big?n=5000", server.policy, "HEAD")
    assert (resp.status, resp.body) == (200, b"")
    assert ("content-length", "5000") in resp.headers


def test_error_statuses_are_responses(server: _Server) -> None:
    resp = go(f"{server.base}/nowhere", server.policy)
    assert (resp.status, resp.body) == (404, b"no such path")


def test_chunked_response_is_dechunked(raw_server: Callable[[Script], RawServer]) -> None:
    srv = raw_server(
        replies(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-A: 1\r\n\r\n",
            b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
        )
    )
    resp = go(srv.url, srv.policy)
    assert resp.body == b"hello world"
    assert [name for name, _ in resp.headers] == ["x-a"]  # transfer-encoding is gone


def test_body_delimited_by_close_is_complete(raw_server: Callable[[Script], RawServer]) -> None:
    srv = raw_server(replies(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nhello"))
    assert go(srv.url, srv.policy).body == b"hello"


def test_folded_response_header_is_unfolded(raw_server: Callable[[Script], RawServer]) -> None:
    srv = raw_server(replies(b"HTTP/1.1 200 OK\r\nX-Fold: a\r\n  b\r\nContent-Length: 0\r\n\r\n"))
    [(name, value)] = [h for h in go(srv.url, srv.policy).headers if h[0] == "x-fold"]
    assert "\r" not in value and "\n" not in value and value.split() == ["a", "b"]


# ------------------------------------------------------------------------ allow-list


def test_nothing_is_allowed_by_default(server: _Server, net: Net) -> None:
    msg = fails("denied", lambda: go(f"{server.base}/echo", FetchPolicy()))
    assert f"127.0.0.1:{server.port}" in msg
    assert net.connects == [] and server.seen == []


def test_port_must_match(server: _Server, net: Net) -> None:
    other = server.port + 1 if server.port < 65535 else server.port - 1
    msg = fails("denied", lambda: go(f"{server.base}/echo", allow(f"127.0.0.1:{other}")))
    assert f"127.0.0.1:{server.port} is not in the allow-list" in msg
    assert net.connects == []


def test_portless_entry_allows_only_the_scheme_default(net: Net) -> None:
    net.refuse_all = True  # see where fetch connects without connecting
    policy = allow("127.0.0.1")
    fails("connect", lambda: go("http://127.0.0.1/", policy))
    fails("connect", lambda: go("https://127.0.0.1/", policy))
    assert net.connects == [("127.0.0.1", 80), ("127.0.0.1", 443)]
    fails("denied", lambda: go("http://127.0.0.1:443/", policy))
    fails("denied", lambda: go("https://127.0.0.1:80/", policy))
    fails("denied", lambda: go("http://127.0.0.1:8080/", policy))
    assert len(net.connects) == 2


@pytest.mark.parametrize(
    ("url", "where"),
    [
        ("http://169.254.169.254/latest/meta-data/", "169.254.169.254:80"),
        ("http://10.0.0.1/", "10.0.0.1:80"),
        ("https://[fe80::1]/", "[fe80::1]:443"),
        ("http://[::ffff:169.254.169.254]:8080/", "[::ffff:a9fe:a9fe]:8080"),
    ],
)
def test_unlisted_addresses_refused_before_any_connection(url: str, where: str, net: Net) -> None:
    policy = allow("127.0.0.1", "api.example", "[::1]")
    msg = fails("denied", lambda: go(url, policy))
    assert msg == f"denied: {where} is not in the allow-list (--allow-http)"
    assert net.connects == [] and net.lookups == []


@pytest.mark.parametrize(
    ("ip", "range_name"),
    [
        ("127.0.0.1", "loopback"),
        ("10.1.2.3", "private"),
        ("192.168.1.1", "private"),
        ("169.254.169.254", "link-local"),
        ("0.0.0.0", "unspecified"),
        ("224.0.0.1", "multicast"),
        ("100.64.0.1", "non-public"),
        ("::1", "loopback"),
        ("fe80::1", "link-local"),
        ("fd00::1", "private"),
        ("::ffff:127.0.0.1", "loopback"),
        ("64:ff9b::a9fe:a9fe", "link-local"),
    ],
)
def test_name_resolving_to_a_non_public_address_is_refused(
    ip: str, range_name: str, net: Net
) -> None:
    net.dns["api.example"] = [ip]
    msg = fails("denied", lambda: go("http://api.example/", allow("api.example")))
    plain = _unwrapped(ip)
    assert msg.startswith("denied: api.example:80 resolves to ")
    assert f"{plain}, a {range_name} address" in msg or f"({plain}), a {range_name}" in msg
    assert net.connects == []


def test_one_bad_address_among_good_ones_refuses_the_name(net: Net) -> None:
    net.dns["api.example"] = [PUBLIC_IP, "10.9.9.9"]
    msg = fails("denied", lambda: go("http://api.example/", allow("api.example")))
    assert "10.9.9.9" in msg and net.connects == []


def test_resolved_address_is_pinned_against_rebinding(
    net: Net, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A rebinding name: public on the first lookup, loopback on every later one.
    answers = iter([[PUBLIC_IP]])

    def rebinding(host: str, port: int, *args: Any, **kwargs: Any) -> Any:
        net.lookups.append(host)
        return [_addrinfo(ip, port) for ip in next(answers, ["127.0.0.1"])]

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    net.refuse_all = True
    msg = fails("connect", lambda: go("http://api.example:8080/x", allow("api.example:8080")))
    assert net.lookups == ["api.example"]  # resolved once...
    assert net.connects == [(PUBLIC_IP, 8080)]  # ...and connected to exactly that address
    assert f"{PUBLIC_IP}: Connection refused" in msg


def test_name_entry_covers_neither_subdomains_nor_addresses(net: Net) -> None:
    net.dns["api.example"] = [PUBLIC_IP]
    policy = allow("api.example")
    fails("denied", lambda: go("http://www.api.example/", policy))
    fails("denied", lambda: go(f"http://{PUBLIC_IP}/", policy))
    assert net.lookups == [] and net.connects == []  # refused names are not even resolved


def test_localhost_entry_allows_loopback(server: _Server, net: Net) -> None:
    net.dns["localhost"] = ["127.0.0.1"]
    resp = go(f"http://LocalHost:{server.port}/echo", allow(f"localhost:{server.port}"))
    assert resp.status == 200
    assert server.seen[0].headers["host"] == f"localhost:{server.port}"
    assert net.lookups == ["localhost"]


def test_localhost_must_resolve_to_loopback(net: Net) -> None:
    net.dns["localhost"] = ["10.0.0.7"]
    msg = fails("denied", lambda: go("http://localhost:9/", allow("localhost:9")))
    assert "10.0.0.7" in msg and net.connects == []


def test_ipv6_literal_entry(net: Net) -> None:
    net.refuse_all = True
    fails("connect", lambda: go("http://[::1]:9/", allow("[::1]:9")))
    assert net.connects == [("::1", 9, 0, 0)]


# ------------------------------------------------------------------------- redirects


def _redirect(server: _Server, to: str, code: int = 302) -> str:
    return f"{server.base}/redirect?code={code}&to={quote(to, safe='')}"


def test_relative_redirect_followed(server: _Server) -> None:
    resp = go(_redirect(server, "/echo?after=1"), server.policy)
    assert resp.status == 200 and ("x-method", "GET") in resp.headers
    assert [s.path for s in server.seen][1] == "/echo?after=1"


def test_absolute_redirect_to_allowed_name_followed(server: _Server, net: Net) -> None:
    net.dns["localhost"] = ["127.0.0.1"]
    policy = allow(f"127.0.0.1:{server.port}", f"localhost:{server.port}")
    resp = go(_redirect(server, f"http://localhost:{server.port}/echo", 301), policy)
    assert resp.status == 200
    assert server.seen[1].headers["host"] == f"localhost:{server.port}"


def test_303_turns_post_into_bodiless_get(server: _Server) -> None:
    headers = [("Content-Type", "text/plain"), ("X-Keep", "1")]
    resp = go(_redirect(server, "/echo", 303), server.policy, "POST", headers, b"data")
    assert resp.body == b""
    final = server.seen[1]
    assert (final.method, final.body) == ("GET", b"")
    assert "content-type" not in final.headers and "content-length" not in final.headers
    assert final.headers["x-keep"] == "1"


def test_307_keeps_method_and_body(server: _Server) -> None:
    resp = go(_redirect(server, "/echo", 307), server.policy, "POST", body=b"data")
    assert resp.body == b"data" and server.seen[1].method == "POST"


def test_credentials_dropped_when_the_origin_changes(server: _Server, net: Net) -> None:
    net.dns["localhost"] = ["127.0.0.1"]
    policy = allow(f"127.0.0.1:{server.port}", f"localhost:{server.port}")
    headers = [("Authorization", "Bearer s3cret"), ("Cookie", "a=1"), ("X-Keep", "1")]
    go(_redirect(server, f"http://localhost:{server.port}/echo"), policy, headers=headers)
    first, second = server.seen
    assert first.headers["authorization"] == "Bearer s3cret"
    assert "authorization" not in second.headers and "cookie" not in second.headers
    assert second.headers["x-keep"] == "1"
    go(_redirect(server, "/echo"), policy, headers=headers)  # same origin: kept
    assert server.seen[3].headers["authorization"] == "Bearer s3cret"


@pytest.mark.parametrize(
    ("to", "kind", "named"),
    [
        ("http://169.254.169.254/latest/meta-data/", "denied", "169.254.169.254:80"),
        ("http://10.0.0.1/", "denied", "10.0.0.1:80"),
        ("http://127.0.0.1:1/", "denied", "127.0.0.1:1"),
        ("http://metadata.google.internal/", "denied", "metadata.google.internal:80"),
        ("file:///etc/passwd", "invalid", "file:///etc/passwd"),
        ("http://[::1/", "invalid", "bad Location"),
    ],
)
def test_redirect_to_refused_destination(
    to: str, kind: str, named: str, server: _Server, net: Net
) -> None:
    msg = fails(kind, lambda: go(_redirect(server, to), server.policy))
    assert msg.startswith(f"{kind}: redirect from 127.0.0.1:{server.port}: ")
    assert named in msg
    assert net.connects == [("127.0.0.1", server.port)]  # only the first hop connected
    assert net.lookups == []


def test_too_many_redirects(server: _Server) -> None:
    msg = fails("denied", lambda: go(f"{server.base}/loop", server.policy))
    assert "more than 5 redirects" in msg
    assert len(server.seen) == 6  # the first request and 5 redirects followed


def test_zero_redirects_allowed(server: _Server) -> None:
    policy = dataclasses.replace(server.policy, max_redirects=0)
    fails("denied", lambda: go(_redirect(server, "/echo"), policy))
    assert len(server.seen) == 1


# -------------------------------------------------------------------------- timeouts


def test_timeout_on_a_silent_server(raw_server: Callable[[Script], RawServer]) -> None:
    srv = raw_server(silent)
    start = time.monotonic()
    msg = fails("timeout", lambda: go(srv.url, srv.policy, timeout_ms=200))
    # Bounds with room for a busy machine: the silent server would hold on for 30 s.
    assert 0.15 <= time.monotonic() - start < 10
    assert "the 200 ms timeout passed while waiting for the response" in msg


def test_deadline_shorter_than_timeout_wins(raw_server: Callable[[Script], RawServer]) -> None:
    srv = raw_server(silent)
    start = time.monotonic()
    msg = fails("timeout", lambda: go(srv.url, srv.policy, timeout_ms=5000, deadline_s=0.2))
    assert 0.15 <= time.monotonic() - start < 2.5  # the deadline, not the 5 s timeout
    assert "the event's time ran out" in msg


def test_spent_deadline_fails_at_once(server: _Server, net: Net) -> None:
    fails("timeout", lambda: go(f"{server.base}/echo", server.policy, deadline_s=-1))
    assert net.connects == []


def test_trickling_body_stopped_by_the_deadline(raw_server: Callable[[Script], RawServer]) -> None:
    srv = raw_server(trickle(b"HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n", b"x" * 5000))
    start = time.monotonic()
    # Each byte comes well within the 10 s timeout; only the total budget can stop this.
    msg = fails("timeout", lambda: go(srv.url, srv.policy, timeout_ms=10_000, deadline_s=0.3))
    assert time.monotonic() - start < 5  # the deadline, not the 10 s timeout nor the 100 s drip
    assert "reading the body" in msg


def test_trickling_head_stopped_by_the_timeout(raw_server: Callable[[Script], RawServer]) -> None:
    srv = raw_server(trickle(b"HTTP/1.1 200 OK\r\n", b"X-Slow: " + b"a" * 5000))
    start = time.monotonic()
    msg = fails("timeout", lambda: go(srv.url, srv.policy, timeout_ms=300))
    assert time.monotonic() - start < 10  # the timeout, not the 100 s drip
    assert "300 ms" in msg


def test_slow_dns_bounded_by_the_timeout(net: Net, monkeypatch: pytest.MonkeyPatch) -> None:
    def slow(host: str, port: int, *args: Any, **kwargs: Any) -> Any:
        time.sleep(5)
        return [_addrinfo(PUBLIC_IP, port)]

    monkeypatch.setattr(socket, "getaddrinfo", slow)
    start = time.monotonic()
    msg = fails("timeout", lambda: go("http://api.example/", allow("api.example"), timeout_ms=150))
    assert time.monotonic() - start < 2.5  # the timeout, not the 5 s resolution
    assert "resolving api.example" in msg
    assert net.connects == []


# ------------------------------------------------------------------------- size cap


def test_declared_body_over_the_cap(server: _Server) -> None:
    msg = fails("too-large", lambda: go(f"{server.base}/big?n={CAP + 1}", server.policy))
    assert msg == "too-large: response body over the 1048576-byte cap"


def test_streamed_body_over_the_cap(raw_server: Callable[[Script], RawServer]) -> None:
    def endless_chunks(conn: socket.socket, stop: threading.Event) -> None:
        read_head(conn)
        conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        while not stop.is_set():
            conn.sendall(b"400\r\n" + b"y" * 1024 + b"\r\n")

    srv = raw_server(endless_chunks)
    policy = dataclasses.replace(srv.policy, max_response_bytes=10_000)
    msg = fails("too-large", lambda: go(srv.url, policy))
    assert msg == "too-large: response body over the 10000-byte cap"


# ----------------------------------------------------------------------- incomplete


def test_body_shorter_than_content_length(raw_server: Callable[[Script], RawServer]) -> None:
    srv = raw_server(replies(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n", b"0123456789"))
    msg = fails("incomplete", lambda: go(srv.url, srv.policy))
    assert "ended after 10 of 100 bytes" in msg


@pytest.mark.parametrize(
    "chunks",
    [
        b"5\r\nhello\r\nzz\r\n",  # a chunk size that is not hex
        b"100\r\nabc",  # the connection closes inside a chunk
        b"5\r\nhello\r\n",  # the connection closes before the last chunk
    ],
)
def test_broken_chunked_body(chunks: bytes, raw_server: Callable[[Script], RawServer]) -> None:
    srv = raw_server(replies(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", chunks))
    fails("incomplete", lambda: go(srv.url, srv.policy))


def test_reset_during_the_body(raw_server: Callable[[Script], RawServer]) -> None:
    def reset(conn: socket.socket, stop: threading.Event) -> None:
        read_head(conn)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n0123456789")
        stop.wait(0.05)
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))

    srv = raw_server(reset)  # closing with SO_LINGER 0 sends RST
    fails("incomplete", lambda: go(srv.url, srv.policy))


# -------------------------------------------------------------------------- connect


def test_connection_refused() -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    msg = fails("connect", lambda: go(f"http://127.0.0.1:{port}/", allow(f"127.0.0.1:{port}")))
    assert msg == f"connect: cannot connect to 127.0.0.1:{port}: Connection refused"


def test_dns_failure(net: Net) -> None:
    msg = fails("connect", lambda: go("http://nowhere.example/", allow("nowhere.example")))
    assert "cannot resolve nowhere.example" in msg and net.connects == []


def test_closed_without_a_response(raw_server: Callable[[Script], RawServer]) -> None:
    srv = raw_server(replies())
    msg = fails("connect", lambda: go(srv.url, srv.policy))
    assert "closed the connection without a response" in msg


def test_garbage_response_head(raw_server: Callable[[Script], RawServer]) -> None:
    srv = raw_server(replies(b"SSH-2.0-OpenSSH\r\n\r\n"))
    assert "bad response head" in fails("connect", lambda: go(srv.url, srv.policy))


# ---------------------------------------------------------------------------- HTTPS


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A throwaway CA and a leaf for localhost and 127.0.0.1, made with the openssl CLI."""
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is not installed")
    d = tmp_path_factory.mktemp("tls")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]

    def run(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True, timeout=30)

    run("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
        "-subj", "/CN=wkhost test CA", "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign")  # fmt: skip
    run("req", *ec, "-keyout", "leaf.key", "-out", "leaf.csr", "-subj", "/CN=localhost")
    (d / "leaf.ext").write_text(
        "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=critical,CA:FALSE\n"
        "keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n"
        "authorityKeyIdentifier=keyid\n"
    )
    run("x509", "-req", "-in", "leaf.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
        "-CAcreateserial", "-out", "leaf.pem", "-days", "2", "-extfile", "leaf.ext")  # fmt: skip
    return d


@dataclass
class TlsServer:
    server: _Server
    sni: list[str | None]


@pytest.fixture
def tls_server(certs: Path) -> Iterator[TlsServer]:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certs / "leaf.pem", certs / "leaf.key")
    sni: list[str | None] = []
    context.sni_callback = lambda sock, name, ctx: sni.append(name)
    for srv in _serve(_Server(tls=context)):
        yield TlsServer(srv, sni)


@pytest.fixture
def trust_test_ca(certs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = ssl.create_default_context

    def with_test_ca(*args: Any, **kwargs: Any) -> ssl.SSLContext:
        context = real(*args, **kwargs)  # still verifies; it only trusts one more CA
        context.load_verify_locations(certs / "ca.pem")
        return context

    monkeypatch.setattr(ssl, "create_default_context", with_test_ca)


@pytest.mark.usefixtures("trust_test_ca")
def test_https_by_name_verifies_the_name_on_the_pinned_address(
    tls_server: TlsServer, net: Net
) -> None:
    port = tls_server.server.port
    net.dns["localhost"] = ["127.0.0.1"]
    resp = go(f"https://localhost:{port}/echo", allow(f"localhost:{port}"), "POST", body=b"tls")
    assert (resp.status, resp.body) == (200, b"tls")
    assert tls_server.sni == ["localhost"]
    assert net.connects == [("127.0.0.1", port)]
    assert tls_server.server.seen[0].headers["host"] == f"localhost:{port}"


@pytest.mark.usefixtures("trust_test_ca")
def test_https_by_ip_literal(tls_server: TlsServer) -> None:
    port = tls_server.server.port
    resp = go(f"https://127.0.0.1:{port}/echo", allow(f"127.0.0.1:{port}"))
    assert resp.status == 200


def test_https_rejects_an_untrusted_certificate(tls_server: TlsServer) -> None:
    port = tls_server.server.port
    msg = fails("connect", lambda: go(f"https://127.0.0.1:{port}/", allow(f"127.0.0.1:{port}")))
    assert f"TLS with 127.0.0.1:{port} failed" in msg and "certificate verify failed" in msg
    assert tls_server.server.seen == []


def test_https_to_a_plain_http_server(server: _Server) -> None:
    url = f"https://127.0.0.1:{server.port}/echo"
    assert "TLS with" in fails("connect", lambda: go(url, server.policy))


# -------------------------------------------------------------------------- invalid


@pytest.mark.parametrize(
    "url",
    [
        "ftp://127.0.0.1/",
        "file:///etc/passwd",
        "/relative/path",
        "127.0.0.1/no-scheme",
        "http://",
        "http:///path-only",
        "http://user:pw@127.0.0.1/",
        "http://127.0.0.1/a b",
        "http://127.0.0.1/\r\nX-Injected: 1",
        "http://exämple.com/",
        "http://127.1/",
        "http://2130706433/",
        "http://0x7f.0.0.1/",
        "http://[::1/",
        "http://::1/",
        "http://[fe80::1%25eth0]/",
        "http://127.0.0.1:0/",
        "http://127.0.0.1:65536/",
        "http://127.0.0.1:http/",
        "http://-bad-.example/",
        "http://a..b/",
        "http://" + "a" * 9000 + "/",
    ],
)
def test_invalid_urls(url: str, net: Net) -> None:
    fails("invalid", lambda: go(url, allow("127.0.0.1", "[::1]")))
    assert net.connects == [] and net.lookups == []


@pytest.mark.parametrize("method", ["", "GE T", "GET\r\n", "GÉT", "CONNECT", "M" * 33])
def test_invalid_methods(method: str, net: Net) -> None:
    fails("invalid", lambda: go("http://127.0.0.1/", allow("127.0.0.1"), method))
    assert net.connects == []


@pytest.mark.parametrize(
    "header",
    [
        ("X-A\r\nX-B", "1"),
        ("X-A", "1\r\nX-Injected: 1"),
        ("X-A", "1\n"),
        ("X-A", "1\x00"),
        ("", "1"),
        ("X A", "1"),
        ("X:A", "1"),
        ("X-A", "\u20ac"),
    ],
)
def test_invalid_headers(header: tuple[str, str], net: Net) -> None:
    fails("invalid", lambda: go("http://127.0.0.1/", allow("127.0.0.1"), headers=[header]))
    assert net.connects == []


def test_malformed_request_values_are_invalid_not_crashes(net: Net) -> None:
    policy = allow("127.0.0.1")
    fails("invalid", lambda: go("http://127.0.0.1/", policy, timeout_ms=-1))
    bad_body = FetchRequest("POST", "http://127.0.0.1/", [], cast(Any, "text"), None)
    fails("invalid", lambda: fetch(bad_body, policy, time.monotonic() + 5))
    assert net.connects == []


def test_fetch_error_is_one_line() -> None:
    err = FetchError("connect", "first line\nsecond\r\nthird")
    assert str(err) == "connect: first line second third"
    assert (err.kind, err.message) == ("connect", "first line second third")


# ---------------------------------------------------------------------------- policy


@pytest.mark.parametrize(
    ("entry", "normal"),
    [
        ("Example.COM", "example.com"),
        ("example.com.:8080", "example.com:8080"),
        (" localhost:9 ", "localhost:9"),
        ("127.0.0.1", "127.0.0.1"),
        ("10.0.0.1:8443", "10.0.0.1:8443"),
        ("[::1]:8080", "[::1]:8080"),
        ("[0:0::1]", "[::1]"),
        ("[FE80::1]", "[fe80::1]"),
    ],
)
def test_policy_parse_normalises(entry: str, normal: str) -> None:
    assert FetchPolicy.parse([entry]).allow == (normal,)


def test_policy_parse_deduplicates_and_keeps_order() -> None:
    policy = FetchPolicy.parse(["b.example", "A.example", "b.example.", "a.example"])
    assert policy.allow == ("b.example", "a.example")
    assert FetchPolicy.parse([]).allow == ()


@pytest.mark.parametrize(
    ("entry", "reason"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("http://example.com", "without scheme"),
        ("example.com/path", "without scheme"),
        ("user@example.com", "without scheme"),
        ("a.example,b.example", "without scheme"),
        ("exa mple.com", "without scheme"),
        ("*.example.com", "wildcards"),
        ("*", "wildcards"),
        ("example.com:0", "port '0'"),
        ("example.com:65536", "port '65536'"),
        ("example.com:", "port ''"),
        ("example.com:http", "port 'http'"),
        ("::1", "brackets"),
        ("[::1", "unclosed"),
        ("[::1]x", "after ']'"),
        ("[127.0.0.1]", "not an IPv6 address"),
        ("[fe80::1%eth0]", "zone"),
        ("127.1", "dotted-quad"),
        ("999.1.1.1", "dotted-quad"),
        ("-bad.example", "valid host name"),
        ("exa_mple.com", "valid host name"),
        ("a" * 64 + ".example", "valid host name"),
        ("0.0.0.0", "not a destination"),
        ("[::]:80", "not a destination"),
        ("224.0.0.1", "not a destination"),
    ],
)
def test_policy_parse_rejects(entry: str, reason: str) -> None:
    with pytest.raises(ValueError, match="bad --allow-http entry") as info:
        FetchPolicy.parse([entry])
    assert reason in str(info.value)
    assert repr(entry) in str(info.value)  # the message names the entry


def test_policy_rejects_a_bare_string_and_bad_limits() -> None:
    with pytest.raises(ValueError, match="not one string"):
        FetchPolicy.parse("example.com")
    with pytest.raises(ValueError, match="not one string"):
        FetchPolicy(allow=cast(Any, "example.com"))
    with pytest.raises(ValueError, match="max_response_bytes"):
        FetchPolicy(max_response_bytes=-1)
    with pytest.raises(ValueError, match="max_redirects"):
        FetchPolicy(max_redirects=-1)
    with pytest.raises(ValueError, match="default_timeout_ms"):
        FetchPolicy(default_timeout_ms=0)
