"""Outgoing HTTP for guests: `fetch`, the host side of the WIT `http.fetch` import.

A guest calls `fetch` synchronously from its worker thread, so this module is plain
blocking code (http.client, socket, ssl): no asyncio, no connection pool. Every fetch
opens one connection per hop, sends `Connection: close`, and closes it. What it may reach
is host/fetch/policy.py's; its time, host/fetch/budget.py's; reading the response,
host/fetch/response.py's.

The host sets Host, Content-Length (whenever there is a body, and for POST/PUT/PATCH),
`Connection: close`, and a User-Agent if the guest sent none. Headers the guest may not
set are dropped: the framing and hop-by-hop ones (host, content-length,
transfer-encoding, connection, keep-alive, proxy-connection, te, trailer, upgrade) and
expect. A header value holds no control character but tab (C0, DEL or C1: host/wire.py's
rule for answers) and no character above U+00FF; the request head, the host's own headers
in it, is at most 64 KiB as written.
"""

from __future__ import annotations

import concurrent.futures
import ipaddress
import re
import socket
import ssl
from dataclasses import dataclass, field
from typing import Any

from .. import tracing
from ..wire import CONTROL_CHARACTER, HOP_BY_HOP
from .budget import Clock
from .errors import FetchError, describe, os_reason
from .policy import (
    Entry,
    FetchPolicy,
    IPAddress,
    Target,
    admit,
    check_resolved,
    entry_for,
    host_text,
)
from .redirects import for_origin, location, redirected
from .response import FetchResponse, receive

__all__ = ["FetchRequest", "fetch"]

_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
# Framing and hop-by-hop headers belong to the host: a guest-set Content-Length or
# Transfer-Encoding that disagreed with the body would desynchronise the connection.
# Proxy-Authenticate belongs to an answer: in a request it is the guest's own header.
_HOST_OWNED_HEADERS = (HOP_BY_HOP - {"proxy-authenticate"}) | {"host"}
_TRACE_HEADERS = ("traceparent", "tracestate")
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_BAD_VALUE = re.compile(r"[\r\n\x00]")
_MAX_HEAD = 64 * 1024

# getaddrinfo cannot be given a timeout, so it runs here and the fetch waits only as long
# as its budget allows. A lookup that hangs keeps a worker until the resolver gives up;
# the pool's size bounds how many threads that can hold.
_RESOLVER = concurrent.futures.ThreadPoolExecutor(max_workers=8, thread_name_prefix="wk-dns")

_SockAddr = tuple[Any, ...]


@dataclass
class FetchRequest:
    method: str
    url: str
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""
    timeout_ms: int | None = None


def fetch(req: FetchRequest, policy: FetchPolicy, deadline: float) -> FetchResponse:
    """Perform `req` under `policy`, giving up at `deadline` (a time.monotonic() value).

    Raises FetchError and nothing else (see host/fetch/__init__.py for the kinds).
    """
    try:
        return _fetch(req, policy, deadline)
    except FetchError:
        raise
    except (ValueError, TypeError, UnicodeError) as exc:
        # Something in the request that validation did not anticipate.
        raise FetchError("invalid", describe(exc)) from exc
    except Exception as exc:
        raise FetchError("connect", f"unexpected {describe(exc)}") from exc


def _fetch(req: FetchRequest, policy: FetchPolicy, deadline: float) -> FetchResponse:
    clock = Clock.start(req.timeout_ms, policy.default_timeout_ms, deadline)
    method = _check_method(req.method)
    headers = _check_headers(req.headers)
    body = bytes(req.body)
    target = admit(req.url, policy)
    redirects = 0
    while True:
        response = _exchange(target, method, headers, body, policy, clock)
        next_url = location(response.status, response.headers)
        if next_url is None:
            return response
        if redirects == policy.max_redirects:
            raise FetchError(
                "denied",
                f"more than {policy.max_redirects} redirects (the last from {target.where})",
            )
        redirects += 1
        after = admit(next_url, policy, via=target)
        method, headers, body = redirected(response.status, method, headers, body)
        headers = for_origin(headers, target, after)
        target = after


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
        if CONTROL_CHARACTER.search(value):  # C0 and C1 but tab, as in an answer's
            raise FetchError("invalid", f"header {name!r} has a control character in its "
                             "value")
        checked.append((name, value))
    return checked


# --------------------------------------------------------------------- one exchange


def _exchange(
    target: Target,
    method: str,
    headers: list[tuple[str, str]],
    body: bytes,
    policy: FetchPolicy,
    clock: Clock,
) -> FetchResponse:
    trace = tracing.fetch_headers(target)  # checked again at each redirect's target
    if trace:  # the host's trace context, not one the guest wrote
        headers = [h for h in headers if h[0].lower() not in _TRACE_HEADERS] + trace
    if tracing.tracer is not None:  # on the fetch's CLIENT span; the query may hold secrets
        tracing.annotate({"http.request.method": method, "server.address": host_text(
            target.host), "server.port": target.port, "url.full": target.url.split("?")[0]})
    head = _request_head(target, method, headers, body)
    entry = entry_for(target, policy)
    clock.left(f"starting the request to {target.where}")
    sock = _connect(target, _addresses(target, entry, clock), clock)
    try:
        _send(sock, target, head + body, clock)
        got = receive(sock, target, method, policy, clock)
    finally:
        sock.close()
    if tracing.tracer is not None:
        tracing.annotate({"http.response.status_code": got.status})
    return got


def _request_head(
    target: Target, method: str, headers: list[tuple[str, str]], body: bytes
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


# ------------------------------------------------------------- resolving and checking


def _addresses(target: Target, entry: Entry, clock: Clock) -> list[tuple[int, _SockAddr]]:
    """The (family, sockaddr) pairs to try, every one of them allowed for `entry`."""
    if not isinstance(target.host, str):
        return [_literal_sockaddr(target.host, target.port)]
    found = []
    for family, sockaddr in _resolve(target.host, target.port, clock):
        check_resolved(target, entry, ipaddress.ip_address(sockaddr[0]))
        found.append((family, sockaddr))
    return found


def _literal_sockaddr(ip: IPAddress, port: int) -> tuple[int, _SockAddr]:
    if ip.version == 4:
        return socket.AF_INET, (str(ip), port)
    return socket.AF_INET6, (str(ip), port, 0, 0)


def _resolve(name: str, port: int, clock: Clock) -> list[tuple[int, _SockAddr]]:
    what = f"resolving {name}"
    job = _RESOLVER.submit(socket.getaddrinfo, name, port, 0, socket.SOCK_STREAM)
    try:
        infos = job.result(timeout=clock.left(what))
    except TimeoutError:
        job.cancel()
        raise clock.expired(what) from None
    except OSError as exc:
        raise FetchError("connect", f"cannot resolve {name}: {os_reason(exc)}") from None
    pairs = [
        (fam, addr) for fam, _, _, _, addr in infos if fam in (socket.AF_INET, socket.AF_INET6)
    ]
    if not pairs:
        raise FetchError("connect", f"cannot resolve {name}: no IPv4 or IPv6 address")
    return list(dict.fromkeys(pairs))


# ------------------------------------------------------------------------ connecting


def _connect(
    target: Target, addresses: list[tuple[int, _SockAddr]], clock: Clock
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
            failures.append(prefix + os_reason(exc))
            continue
        except BaseException:
            sock.close()
            raise
        return _tls(sock, target, clock) if target.scheme == "https" else sock
    raise FetchError("connect", f"cannot connect to {target.where}: {'; '.join(failures)}")


def _tls(sock: socket.socket, target: Target, clock: Clock) -> socket.socket:
    """Wrap a connected socket; the certificate is checked against the URL's host."""
    what = f"the TLS handshake with {target.where}"
    context = ssl.create_default_context()
    try:
        sock.settimeout(clock.left(what))
        # The socket is already connected to the pinned address; server_hostname only
        # drives SNI and certificate verification.
        return context.wrap_socket(sock, server_hostname=host_text(target.host, brackets=False))
    except TimeoutError:
        sock.close()
        raise clock.expired(what) from None
    except OSError as exc:  # ssl.SSLError included
        sock.close()
        raise FetchError("connect", f"TLS with {target.where} failed: {describe(exc)}") from None
    except BaseException:
        sock.close()
        raise


def _send(sock: socket.socket, target: Target, data: bytes, clock: Clock) -> None:
    what = f"sending the request to {target.where}"
    try:
        # One sendall: its timeout bounds the whole send, and head and body leave together.
        sock.settimeout(clock.left(what))
        sock.sendall(data)
    except TimeoutError:
        raise clock.expired(what) from None
    except OSError as exc:
        raise FetchError(
            "connect", f"sending to {target.where} failed: {os_reason(exc)}"
        ) from None
