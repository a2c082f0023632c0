"""Outgoing HTTP for guests: the host side of the WIT `http.fetch` import.

A guest calls `fetch` synchronously from its worker thread, so this module is plain
blocking code (http.client, socket, ssl): no asyncio, no connection pool. Every fetch
opens one connection per hop, sends `Connection: close`, and closes it.

Allow-list (`--allow-http`, `FetchPolicy.parse`)
    Nothing is allowed by default. An entry is `HOST` or `HOST:PORT`, where HOST is a DNS
    name (letters, digits, hyphens; compared case-insensitively; one trailing dot ignored),
    a dotted-quad IPv4 literal, or an IPv6 literal in brackets (`[::1]:8080`). An entry
    without a port allows only the URL scheme's default port: 80 for http://, 443 for
    https:// (so `example.com` allows `http://example.com/` and `https://example.com/`, but
    not `http://example.com:443/`). No wildcards, schemes, paths, user info or lists.
    A URL is allowed when its host and port match an entry exactly: a name entry matches
    only that name (not its subdomains, not the addresses it resolves to), and an IP entry
    only that literal in the URL.

    The resolved address is checked too. A name is resolved once (socket.getaddrinfo, in a
    small thread pool so the fetch's time limit bounds it) and the host connects to exactly
    the addresses it got, never resolving again, so DNS rebinding cannot move a checked
    name to another address. Every address a name resolves to must be public: globally
    routable (ipaddress `is_global`) and not multicast, after unwrapping IPv4-mapped, 6to4
    and NAT64 forms. That refuses loopback, link-local (169.254.0.0/16, fe80::/10, where
    cloud metadata services live), private, shared (100.64.0.0/10), unspecified and
    reserved addresses. Two exceptions: the entry `localhost` allows the name `localhost`,
    which must resolve to loopback addresses only; and an IP-literal entry allows that
    address whatever its range (the operator named it), except unspecified and multicast
    addresses, which `parse` rejects. Every redirect target is checked the same way.

Redirects
    301, 302, 303, 307 and 308 with a Location are followed, at most
    `policy.max_redirects` times; one more is refused as "denied". 303 (except for HEAD),
    and 301/302 after a POST, become a GET without body or Content-* headers. When the
    origin (scheme, host, port) changes, Authorization, Proxy-Authorization and Cookie
    are dropped. The body of a followed redirect is not read.

Time
    The fetch's budget is min(req.timeout_ms or policy.default_timeout_ms, the event's
    deadline - now), and it covers the whole fetch: DNS, connect, TLS, sending, the
    response head and body, and every redirect. Each socket operation gets the time left,
    and the time left is checked before each read, so a server that trickles bytes cannot
    stretch a fetch past its budget. A budget that is already spent fails at once.

Request and response
    The host sets Host, Content-Length (whenever there is a body, and for POST/PUT/PATCH),
    `Connection: close`, and a User-Agent if the guest sent none. Headers the guest may
    not set are dropped: the framing and hop-by-hop ones (host, content-length,
    transfer-encoding, connection, keep-alive, proxy-connection, te, trailer, upgrade) and
    expect. Response header names are lower case, folded values are unfolded, and the
    hop-by-hop response headers (transfer-encoding, connection, keep-alive,
    proxy-connection) are dropped because the body handed back is already de-chunked.
    Bodies are returned as received (no decompression). A body without Content-Length or
    chunking ends when the server closes; only a reset can mark it broken.

Errors: `fetch` raises only FetchError, whose `str()` is one line "KIND: message":
    denied      the destination, its resolved address or a redirect target is not
                allowed, or there were more than `max_redirects` redirects
    timeout     the budget above ran out (the message says whether the event's deadline
                or the request's timeout was the limit)
    too-large   the response body is over `policy.max_response_bytes` (named in the
                message); at most cap + 1 bytes are read, nothing is truncated silently
    incomplete  the body broke before its end: fewer bytes than Content-Length, a
                broken chunked encoding, a reset
    connect     DNS failure, refused or failed connection, TLS failure, no valid
                response head
    invalid     a malformed request: URL, scheme, method or header
"""

from __future__ import annotations

import concurrent.futures
import http.client
import io
import ipaddress
import re
import socket
import ssl
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, cast
from urllib.parse import urljoin, urlsplit

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer

__all__ = ["FetchError", "FetchPolicy", "FetchRequest", "FetchResponse", "fetch"]

ErrorKind = Literal["denied", "timeout", "too-large", "incomplete", "connect", "invalid"]
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_DEFAULT_PORTS = {"http": 80, "https": 443}
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
# Framing and hop-by-hop headers belong to the host: a guest-set Content-Length or
# Transfer-Encoding that disagreed with the body would desynchronise the connection.
_HOST_OWNED_HEADERS = frozenset(
    {
        "host",
        "content-length",
        "transfer-encoding",
        "connection",
        "keep-alive",
        "proxy-connection",
        "te",
        "trailer",
        "upgrade",
        "expect",
    }
)
_HOP_BY_HOP_RESPONSE = frozenset(
    {"transfer-encoding", "connection", "keep-alive", "proxy-connection"}
)
_CREDENTIAL_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie"})
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_BAD_VALUE = re.compile(r"[\r\n\x00]")
_URL_BAD_CHAR = re.compile(r"[^\x21-\x7e]")
_LABEL = re.compile(r"(?!-)[a-z0-9-]{1,63}(?<!-)")
_NUMERIC_LABEL = re.compile(r"0x[0-9a-f]*|[0-9]+")
_FOLD = re.compile(r"\r?\n[ \t]*")
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_MAX_URL = 8192
_MAX_HEAD = 64 * 1024
_READ_CHUNK = 64 * 1024
_MAX_MESSAGE = 400

# getaddrinfo cannot be given a timeout, so it runs here and the fetch waits only as long
# as its budget allows. A lookup that hangs keeps a worker until the resolver gives up;
# the pool's size bounds how many threads that can hold.
_RESOLVER = concurrent.futures.ThreadPoolExecutor(max_workers=8, thread_name_prefix="wk-dns")

_SockAddr = tuple[Any, ...]


class FetchError(Exception):
    """A fetch that produced no response. `str(e)` is the one line "KIND: message"."""

    def __init__(self, kind: ErrorKind, message: str) -> None:
        self.kind: ErrorKind = kind
        self.message = _one_line(message)
        super().__init__(f"{kind}: {self.message}")


@dataclass(frozen=True)
class _Entry:
    """One parsed allow-list entry: a lower-case name or an IP, and an optional port."""

    host: str | IPAddress
    port: int | None

    def __str__(self) -> str:
        host = _host_text(self.host)
        return host if self.port is None else f"{host}:{self.port}"


@dataclass(frozen=True)
class FetchPolicy:
    """What guests may fetch. Entries are validated and normalised on construction."""

    allow: tuple[str, ...] = ()
    max_response_bytes: int = 1 << 20
    max_redirects: int = 5
    default_timeout_ms: int = 10_000
    _entries: tuple[_Entry, ...] = field(default=(), init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.allow, str):
            raise ValueError("allow must be a list of entries, not one string")
        entries = tuple(dict.fromkeys(_parse_entry(raw) for raw in self.allow))
        object.__setattr__(self, "_entries", entries)
        object.__setattr__(self, "allow", tuple(str(e) for e in entries))
        if self.max_response_bytes < 0:
            raise ValueError("max_response_bytes must be >= 0")
        if self.max_redirects < 0:
            raise ValueError("max_redirects must be >= 0")
        if self.default_timeout_ms <= 0:
            raise ValueError("default_timeout_ms must be > 0")

    @staticmethod
    def parse(entries: Iterable[str]) -> FetchPolicy:
        """A policy allowing `entries` (from --allow-http), with default limits.

        Raises ValueError naming the first bad entry and what is wrong with it.
        """
        if isinstance(entries, str):
            raise ValueError("expected a list of --allow-http entries, not one string")
        return FetchPolicy(allow=tuple(entries))


@dataclass
class FetchRequest:
    method: str
    url: str
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""
    timeout_ms: int | None = None


@dataclass
class FetchResponse:
    status: int
    headers: list[tuple[str, str]]
    body: bytes


@dataclass(frozen=True)
class _Target:
    """A checked absolute URL, split into what the connection needs."""

    url: str
    scheme: str
    host: str | IPAddress
    port: int
    path: str  # the request-target: path and query

    @property
    def where(self) -> str:
        return f"{_host_text(self.host)}:{self.port}"

    @property
    def authority(self) -> str:
        host = _host_text(self.host)
        return host if self.port == _DEFAULT_PORTS[self.scheme] else f"{host}:{self.port}"

    @property
    def origin(self) -> tuple[str, str | IPAddress, int]:
        return (self.scheme, self.host, self.port)


# --------------------------------------------------------------------------- entry point


def fetch(req: FetchRequest, policy: FetchPolicy, deadline: float) -> FetchResponse:
    """Perform `req` under `policy`, giving up at `deadline` (a time.monotonic() value).

    Raises FetchError and nothing else (see the module docstring for the kinds).
    """
    try:
        return _fetch(req, policy, deadline)
    except FetchError:
        raise
    except (ValueError, TypeError, UnicodeError) as exc:
        # Something in the request that validation did not anticipate.
        raise FetchError("invalid", _describe(exc)) from exc
    except Exception as exc:
        raise FetchError("connect", f"unexpected {_describe(exc)}") from exc


def _fetch(req: FetchRequest, policy: FetchPolicy, deadline: float) -> FetchResponse:
    clock = _Clock.start(req.timeout_ms, policy.default_timeout_ms, deadline)
    method = _check_method(req.method)
    headers = _check_headers(req.headers)
    body = bytes(req.body)
    target = _admit(req.url, policy)
    redirects = 0
    while True:
        response = _exchange(target, method, headers, body, policy, clock)
        location = _location(response)
        if location is None:
            return response
        if redirects == policy.max_redirects:
            raise FetchError(
                "denied",
                f"more than {policy.max_redirects} redirects (the last from {target.where})",
            )
        redirects += 1
        after = _admit(location, policy, via=target)
        method, headers, body = _redirected(response.status, method, headers, body)
        if after.origin != target.origin:
            headers = [(n, v) for n, v in headers if n.lower() not in _CREDENTIAL_HEADERS]
        target = after


def _admit(url: str, policy: FetchPolicy, via: _Target | None = None) -> _Target:
    """Parse and allow-list-check `url` (a Location relative to `via`, for a redirect).

    No I/O happens before this passes.
    """
    try:
        target = _parse_url(url if via is None else _join(via.url, url))
        _entry_for(target, policy)
    except FetchError as exc:
        if via is None:
            raise
        raise FetchError(exc.kind, f"redirect from {via.where}: {exc.message}") from None
    return target


# ----------------------------------------------------------------------- time budget


@dataclass(frozen=True)
class _Clock:
    stop: float  # time.monotonic() at which the fetch gives up
    budget_ms: int
    by_deadline: bool  # the event's deadline, not the request's timeout, is the limit

    @staticmethod
    def start(timeout_ms: int | None, default_ms: int, deadline: float) -> _Clock:
        if timeout_ms is not None and timeout_ms < 0:
            raise FetchError("invalid", f"timeout-ms {timeout_ms} is negative")
        now = time.monotonic()
        requested = (timeout_ms or default_ms) / 1000
        left = deadline - now
        budget = min(requested, left)
        return _Clock(now + budget, max(0, round(budget * 1000)), left < requested)

    def left(self, what: str) -> float:
        """Seconds left, or the timeout error if there are none."""
        left = self.stop - time.monotonic()
        if left <= 0:
            raise self.expired(what)
        return left

    def expired(self, what: str) -> FetchError:
        if self.by_deadline:
            return FetchError("timeout", f"the event's time ran out while {what}")
        return FetchError("timeout", f"the {self.budget_ms} ms timeout passed while {what}")


# ------------------------------------------------------------------ request validation


def _check_method(method: str) -> str:
    if not isinstance(method, str) or len(method) > 32 or not _TOKEN.fullmatch(method):
        raise FetchError("invalid", f"method {method!r} is not an HTTP token")
    if method.upper() == "CONNECT":
        # CONNECT would turn the connection into a tunnel the host does not police.
        raise FetchError("invalid", "method CONNECT is not supported")
    return method


def _check_headers(headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    checked = []
    for name, value in headers:
        if not _TOKEN.fullmatch(name):
            raise FetchError("invalid", f"header name {name!r} is not an HTTP token")
        if _BAD_VALUE.search(value):
            raise FetchError("invalid", f"header {name!r} has CR, LF or NUL in its value")
        if any(ord(c) > 0xFF for c in value):
            raise FetchError("invalid", f"header {name!r} has a character above U+00FF")
        checked.append((name, value))
    return checked


def _parse_url(url: str) -> _Target:
    if not isinstance(url, str) or len(url) > _MAX_URL:
        raise FetchError("invalid", f"the URL is not a string of at most {_MAX_URL} characters")
    if _URL_BAD_CHAR.search(url):
        # Spaces and controls would split the request line; non-ASCII must be encoded.
        raise FetchError("invalid", "the URL has spaces, controls or non-ASCII characters")
    try:
        parts = urlsplit(url)
    except ValueError as exc:  # e.g. an unclosed "[" in the authority
        raise FetchError("invalid", f"bad URL: {exc}") from None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.netloc:
        raise FetchError("invalid", f"{_clip(url)!r} is not an absolute http:// or https:// URL")
    if "@" in parts.netloc:
        raise FetchError("invalid", "user info (user:password@) in URLs is not supported")
    try:
        host_text, bracketed, port = _split_host_port(parts.netloc)
        host = _parse_host(host_text, bracketed)
    except ValueError as exc:
        raise FetchError("invalid", f"bad URL authority {parts.netloc!r}: {exc}") from None
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return _Target(url, scheme, host, port or _DEFAULT_PORTS[scheme], path)


# ------------------------------------------------------------------ allow-list entries


def _parse_entry(raw: str) -> _Entry:
    if not isinstance(raw, str):
        raise ValueError(f"--allow-http entry {raw!r} is not a string")
    text = raw.strip()
    try:
        if not text:
            raise ValueError("it is empty")
        if "*" in text:
            raise ValueError("wildcards are not supported; list each host")
        if any(c in text for c in "/@,?#") or any(c.isspace() for c in text):
            raise ValueError("expected HOST or HOST:PORT, without scheme, path, user or list")
        host_text, bracketed, port = _split_host_port(text)
        host = _parse_host(host_text, bracketed)
    except ValueError as exc:
        raise ValueError(f"bad --allow-http entry {raw!r}: {exc}") from None
    if not isinstance(host, str) and (host.is_unspecified or host.is_multicast):
        raise ValueError(f"bad --allow-http entry {raw!r}: {host} is not a destination")
    return _Entry(host, port)


def _split_host_port(text: str) -> tuple[str, bool, int | None]:
    """Split "host", "host:port", "[v6]" or "[v6]:port"; the bool says "bracketed"."""
    if text.startswith("["):
        close = text.find("]")
        if close < 0:
            raise ValueError("unclosed '['")
        rest = text[close + 1 :]
        if rest and not rest.startswith(":"):
            raise ValueError(f"unexpected {rest!r} after ']'")
        return text[1:close], True, _parse_port(rest[1:]) if rest else None
    if text.count(":") > 1:
        raise ValueError("an IPv6 address must be in brackets, e.g. [::1]:8080")
    host, sep, port = text.partition(":")
    return host, False, _parse_port(port) if sep else None


def _parse_port(text: str) -> int:
    if not (text.isascii() and text.isdigit() and 1 <= int(text) <= 65535):
        raise ValueError(f"port {text!r} is not a number from 1 to 65535")
    return int(text)


def _parse_host(text: str, bracketed: bool) -> str | IPAddress:
    """A bracketed IPv6 literal, a dotted-quad IPv4 literal, or a lower-case DNS name."""
    if bracketed:
        if "%" in text:
            raise ValueError("IPv6 zone ids are not supported")
        try:
            return ipaddress.IPv6Address(text)
        except ValueError:
            raise ValueError(f"{text!r} is not an IPv6 address") from None
    try:
        return ipaddress.IPv4Address(text)
    except ValueError:
        pass
    name = text.lower().removesuffix(".")
    labels = name.split(".")
    if _NUMERIC_LABEL.fullmatch(labels[-1]):
        # Resolvers read "127.1", "0x7f.0.0.1" or "2130706433" as IPv4; only dotted quads
        # are accepted, so an address always looks like itself.
        raise ValueError(f"{text!r} is not a dotted-quad IPv4 address")
    if len(name) > 253 or not all(_LABEL.fullmatch(label) for label in labels):
        raise ValueError(f"{text!r} is not a valid host name (letters, digits, hyphens)")
    return name


def _entry_for(target: _Target, policy: FetchPolicy) -> _Entry:
    default = _DEFAULT_PORTS[target.scheme]
    for entry in policy._entries:
        port_ok = target.port == (default if entry.port is None else entry.port)
        if entry.host == target.host and port_ok:
            return entry
    raise FetchError("denied", f"{target.where} is not in the allow-list (--allow-http)")


# ------------------------------------------------------------- resolving and checking


def _addresses(target: _Target, entry: _Entry, clock: _Clock) -> list[tuple[int, _SockAddr]]:
    """The (family, sockaddr) pairs to try, every one of them allowed for `entry`."""
    if not isinstance(target.host, str):
        return [_literal_sockaddr(target.host, target.port)]
    found = []
    for family, sockaddr in _resolve(target.host, target.port, clock):
        _check_resolved(target, entry, ipaddress.ip_address(sockaddr[0]))
        found.append((family, sockaddr))
    return found


def _literal_sockaddr(ip: IPAddress, port: int) -> tuple[int, _SockAddr]:
    if ip.version == 4:
        return socket.AF_INET, (str(ip), port)
    return socket.AF_INET6, (str(ip), port, 0, 0)


def _resolve(name: str, port: int, clock: _Clock) -> list[tuple[int, _SockAddr]]:
    what = f"resolving {name}"
    job = _RESOLVER.submit(socket.getaddrinfo, name, port, 0, socket.SOCK_STREAM)
    try:
        infos = job.result(timeout=clock.left(what))
    except TimeoutError:
        job.cancel()
        raise clock.expired(what) from None
    except OSError as exc:
        raise FetchError("connect", f"cannot resolve {name}: {_os_reason(exc)}") from None
    pairs = [
        (fam, addr) for fam, _, _, _, addr in infos if fam in (socket.AF_INET, socket.AF_INET6)
    ]
    if not pairs:
        raise FetchError("connect", f"cannot resolve {name}: no IPv4 or IPv6 address")
    return list(dict.fromkeys(pairs))


def _check_resolved(target: _Target, entry: _Entry, ip: IPAddress) -> None:
    plain = _unwrap(ip)
    shown = str(ip) if plain == ip else f"{ip} ({plain})"
    if entry.host == "localhost":
        if not plain.is_loopback:
            raise FetchError(
                "denied", f"{target.where} resolves to {shown}, but localhost must be loopback"
            )
    elif not (plain.is_global and not plain.is_multicast):
        raise FetchError(
            "denied",
            f"{target.where} resolves to {shown}, a {_range_name(plain)} address; "
            "only an IP-literal entry can allow it",
        )


def _unwrap(ip: IPAddress) -> IPAddress:
    """The IPv4 address an IPv6 address carries (mapped, 6to4, NAT64), else `ip`."""
    if isinstance(ip, ipaddress.IPv4Address):
        return ip
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip in _NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return ip


def _range_name(ip: IPAddress) -> str:
    ranges = [
        ("loopback", ip.is_loopback),
        ("link-local", ip.is_link_local),
        ("unspecified", ip.is_unspecified),
        ("multicast", ip.is_multicast),
        ("private", ip.is_private),
    ]
    return next((name for name, inside in ranges if inside), "non-public")


# --------------------------------------------------------------------- one exchange


def _exchange(
    target: _Target,
    method: str,
    headers: list[tuple[str, str]],
    body: bytes,
    policy: FetchPolicy,
    clock: _Clock,
) -> FetchResponse:
    head = _request_head(target, method, headers, body)
    entry = _entry_for(target, policy)
    clock.left(f"starting the request to {target.where}")
    sock = _connect(target, _addresses(target, entry, clock), clock)
    try:
        _send(sock, target, head + body, clock)
        return _receive(sock, target, method, policy, clock)
    finally:
        sock.close()


def _request_head(
    target: _Target, method: str, headers: list[tuple[str, str]], body: bytes
) -> bytes:
    lines = [f"{method} {target.path} HTTP/1.1", f"Host: {target.authority}"]
    lines += [f"{n}: {v}" for n, v in headers if n.lower() not in _HOST_OWNED_HEADERS]
    if body or method in _BODY_METHODS:
        lines.append(f"Content-Length: {len(body)}")
    if not any(n.lower() == "user-agent" for n, _ in headers):
        lines.append("User-Agent: wkhost")
    lines.append("Connection: close")
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    if len(head) > _MAX_HEAD:
        raise FetchError("invalid", f"the request head is over {_MAX_HEAD} bytes")
    return head


def _connect(
    target: _Target, addresses: list[tuple[int, _SockAddr]], clock: _Clock
) -> socket.socket:
    """Connect to the first of `addresses` that answers (and do TLS for https)."""
    failures = []
    for family, sockaddr in addresses:
        what = f"connecting to {target.where} ({sockaddr[0]})"
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.settimeout(clock.left(what))
            sock.connect(sockaddr)
        except TimeoutError:
            sock.close()
            raise clock.expired(what) from None
        except OSError as exc:
            sock.close()
            # Name the address only when it differs from what the URL says.
            prefix = f"{sockaddr[0]}: " if isinstance(target.host, str) else ""
            failures.append(prefix + _os_reason(exc))
            continue
        except BaseException:
            sock.close()
            raise
        return _tls(sock, target, clock) if target.scheme == "https" else sock
    raise FetchError("connect", f"cannot connect to {target.where}: {'; '.join(failures)}")


def _tls(sock: socket.socket, target: _Target, clock: _Clock) -> socket.socket:
    """Wrap a connected socket; the certificate is checked against the URL's host."""
    what = f"the TLS handshake with {target.where}"
    context = ssl.create_default_context()
    try:
        sock.settimeout(clock.left(what))
        # The socket is already connected to the pinned address; server_hostname only
        # drives SNI and certificate verification.
        return context.wrap_socket(sock, server_hostname=_host_text(target.host, brackets=False))
    except TimeoutError:
        sock.close()
        raise clock.expired(what) from None
    except OSError as exc:  # ssl.SSLError included
        sock.close()
        raise FetchError("connect", f"TLS with {target.where} failed: {_describe(exc)}") from None
    except BaseException:
        sock.close()
        raise


def _send(sock: socket.socket, target: _Target, data: bytes, clock: _Clock) -> None:
    what = f"sending the request to {target.where}"
    try:
        # One sendall: its timeout bounds the whole send, and head and body leave together.
        sock.settimeout(clock.left(what))
        sock.sendall(data)
    except TimeoutError:
        raise clock.expired(what) from None
    except OSError as exc:
        raise FetchError(
            "connect", f"sending to {target.where} failed: {_os_reason(exc)}"
        ) from None


def _receive(
    sock: socket.socket, target: _Target, method: str, policy: FetchPolicy, clock: _Clock
) -> FetchResponse:
    source = _DeadlineSource(sock, clock)
    # HTTPResponse only calls makefile("rb") on what it is given.
    resp = http.client.HTTPResponse(cast(socket.socket, source), method=method)
    try:
        _begin(resp, target, clock)
        headers = _response_headers(resp)
        if resp.status in _REDIRECTS and resp.getheader("location"):
            return FetchResponse(resp.status, headers, b"")  # followed: its body is moot
        return FetchResponse(resp.status, headers, _read_body(resp, target, policy, clock))
    finally:
        resp.close()


def _begin(resp: http.client.HTTPResponse, target: _Target, clock: _Clock) -> None:
    try:
        resp.begin()
    except TimeoutError:
        raise clock.expired(f"waiting for the response from {target.where}") from None
    except http.client.RemoteDisconnected:
        raise FetchError(
            "connect", f"{target.where} closed the connection without a response"
        ) from None
    except (http.client.HTTPException, OSError) as exc:
        raise FetchError(
            "connect", f"bad response head from {target.where}: {_describe(exc)}"
        ) from None


def _response_headers(resp: http.client.HTTPResponse) -> list[tuple[str, str]]:
    return [
        (name.lower(), _FOLD.sub(" ", value))
        for name, value in resp.getheaders()
        if name.lower() not in _HOP_BY_HOP_RESPONSE
    ]


def _read_body(
    resp: http.client.HTTPResponse, target: _Target, policy: FetchPolicy, clock: _Clock
) -> bytes:
    cap = policy.max_response_bytes
    if resp.length is not None and resp.length > cap:
        raise _too_large(cap)  # the declared length is enough; do not read it
    body = bytearray()
    while True:
        try:
            # Ask for no more than one byte past the cap, so a huge body costs cap + 1.
            piece = resp.read(min(_READ_CHUNK, cap + 1 - len(body)))
        except TimeoutError:
            raise clock.expired(f"reading the body from {target.where}") from None
        except (http.client.HTTPException, OSError) as exc:
            raise FetchError(
                "incomplete",
                f"the body from {target.where} broke after {len(body)} bytes: {_describe(exc)}",
            ) from None
        if not piece:
            break
        body += piece
        if len(body) > cap:
            raise _too_large(cap)
    if resp.length:  # http.client stops quietly at EOF when Content-Length is not reached
        expected = len(body) + resp.length
        raise FetchError(
            "incomplete",
            f"the body from {target.where} ended after {len(body)} of {expected} bytes",
        )
    return bytes(body)


def _too_large(cap: int) -> FetchError:
    return FetchError("too-large", f"response body over the {cap}-byte cap")


class _DeadlineSource:
    """Stands in for the socket given to HTTPResponse so every read sees the budget."""

    def __init__(self, sock: socket.socket, clock: _Clock) -> None:
        self._sock = sock
        self._clock = clock

    def makefile(self, mode: str) -> io.BufferedReader:
        return io.BufferedReader(_DeadlineReader(self._sock, self._clock), _READ_CHUNK)


class _DeadlineReader(io.RawIOBase):
    """Raw reads with the socket timeout reset to the time left before each one.

    A per-read timeout alone lets a server send one byte just before each timeout and go
    on forever; recomputing it from the fetch's stop time bounds the total.
    """

    def __init__(self, sock: socket.socket, clock: _Clock) -> None:
        super().__init__()
        self._sock = sock
        self._clock = clock

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: WriteableBuffer) -> int:
        left = self._clock.stop - time.monotonic()
        if left <= 0:
            raise TimeoutError("the fetch's time ran out")
        self._sock.settimeout(left)
        return self._sock.recv_into(buffer)


# ------------------------------------------------------------------------- helpers


def _location(response: FetchResponse) -> str | None:
    if response.status not in _REDIRECTS:
        return None
    return next((v for n, v in response.headers if n == "location" and v), None)


def _redirected(
    status: int, method: str, headers: list[tuple[str, str]], body: bytes
) -> tuple[str, list[tuple[str, str]], bytes]:
    """The request to send to a redirect's target (RFC 9110 15.4, as browsers do)."""
    if (status == 303 and method != "HEAD") or (status in (301, 302) and method == "POST"):
        kept = [(n, v) for n, v in headers if not n.lower().startswith("content-")]
        return "GET", kept, b""
    return method, headers, body


def _join(base: str, location: str) -> str:
    try:
        return urljoin(base, location)
    except ValueError as exc:
        raise FetchError("invalid", f"bad Location {_clip(location)!r}: {exc}") from None


def _host_text(host: str | IPAddress, brackets: bool = True) -> str:
    if isinstance(host, ipaddress.IPv6Address) and brackets:
        return f"[{host}]"
    return str(host)


def _os_reason(exc: OSError) -> str:
    return exc.strerror or _describe(exc)


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _clip(text: str) -> str:
    return text if len(text) <= 100 else text[:100] + "..."


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= _MAX_MESSAGE else line[: _MAX_MESSAGE - 3] + "..."
