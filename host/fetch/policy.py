"""What a guest may fetch: the allow-list, the addresses it may reach, the redirects.

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
    small thread pool so the fetch's time limit bounds it: host/fetch/transport.py) and
    the host connects to exactly the addresses it got, never resolving again, so DNS
    rebinding cannot move a checked name to another address. Every address a name
    resolves to must be public: globally routable (ipaddress `is_global`) and not
    multicast, after unwrapping IPv4-mapped, 6to4 and NAT64 forms. That refuses loopback,
    link-local (169.254.0.0/16, fe80::/10, where cloud metadata services live), private,
    shared (100.64.0.0/10), unspecified and reserved addresses. Two exceptions: the entry
    `localhost` allows the name `localhost`, which must resolve to loopback addresses only;
    and an IP-literal entry allows that address whatever its range (the operator named
    it), except unspecified and multicast addresses, which `parse` rejects. Every redirect
    target is checked the same way (which redirects are followed, and what is sent on:
    host/fetch/redirects.py).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import urljoin, urlsplit

from .errors import FetchError, clip

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

DEFAULT_PORTS = {"http": 80, "https": 443}
_URL_BAD_CHAR = re.compile(r"[^\x21-\x7e]")
_LABEL = re.compile(r"(?!-)[a-z0-9-]{1,63}(?<!-)")
_NUMERIC_LABEL = re.compile(r"0x[0-9a-f]*|[0-9]+")
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_MAX_URL = 8192


@dataclass(frozen=True)
class Entry:
    """One parsed allow-list entry: a lower-case name or an IP, and an optional port."""

    host: str | IPAddress
    port: int | None

    def __str__(self) -> str:
        host = host_text(self.host)
        return host if self.port is None else f"{host}:{self.port}"


@dataclass(frozen=True)
class FetchPolicy:
    """What guests may fetch. Entries are validated and normalised on construction."""

    allow: tuple[str, ...] = ()
    max_response_bytes: int = 1 << 20
    max_redirects: int = 5
    default_timeout_ms: int = 10_000
    via: str | None = None  # testing only: every fetch to this local server (via.py)
    _entries: tuple[Entry, ...] = field(default=(), init=False, repr=False, compare=False)

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


@dataclass(frozen=True)
class Target:
    """A checked absolute URL, split into what the connection needs."""

    url: str
    scheme: str
    host: str | IPAddress
    port: int
    path: str  # the request-target: path and query

    @property
    def where(self) -> str:
        return f"{host_text(self.host)}:{self.port}"

    @property
    def authority(self) -> str:
        host = host_text(self.host)
        return host if self.port == DEFAULT_PORTS[self.scheme] else f"{host}:{self.port}"

    @property
    def origin(self) -> tuple[str, str | IPAddress, int]:
        return (self.scheme, self.host, self.port)


def admit(url: str, policy: FetchPolicy, via: Target | None = None) -> Target:
    """Parse and allow-list-check `url` (a Location relative to `via`, for a redirect).

    No I/O happens before this passes.
    """
    try:
        target = _parse_url(url if via is None else _join(via.url, url))
        entry_for(target, policy)
    except FetchError as exc:
        if via is None:
            raise
        raise FetchError(exc.kind, f"redirect from {via.where}: {exc.message}") from None
    return target


def entry_for(target: Target, policy: FetchPolicy) -> Entry:
    default = DEFAULT_PORTS[target.scheme]
    for entry in policy._entries:
        port_ok = target.port == (default if entry.port is None else entry.port)
        if entry.host == target.host and port_ok:
            return entry
    raise FetchError("denied", f"{target.where} is not in the allow-list (--allow-http)")


# --------------------------------------------------------------------------- URLs


def _parse_url(url: str) -> Target:
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
    if scheme not in DEFAULT_PORTS or not parts.netloc:
        raise FetchError("invalid", f"{clip(url)!r} is not an absolute http:// or https:// URL")
    if "@" in parts.netloc:
        raise FetchError("invalid", "user info (user:password@) in URLs is not supported")
    try:
        host_part, bracketed, port = _split_host_port(parts.netloc)
        host = _parse_host(host_part, bracketed)
    except ValueError as exc:
        raise FetchError("invalid", f"bad URL authority {parts.netloc!r}: {exc}") from None
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return Target(url, scheme, host, port or DEFAULT_PORTS[scheme], path)


def host_text(host: str | IPAddress, brackets: bool = True) -> str:
    if isinstance(host, ipaddress.IPv6Address) and brackets:
        return f"[{host}]"
    return str(host)


def _join(base: str, location: str) -> str:
    try:
        return urljoin(base, location)
    except ValueError as exc:
        raise FetchError("invalid", f"bad Location {clip(location)!r}: {exc}") from None


# ------------------------------------------------------------------ allow-list entries


def _parse_entry(raw: str) -> Entry:
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
        host_part, bracketed, port = _split_host_port(text)
        host = _parse_host(host_part, bracketed)
    except ValueError as exc:
        raise ValueError(f"bad --allow-http entry {raw!r}: {exc}") from None
    if not isinstance(host, str) and (host.is_unspecified or host.is_multicast):
        raise ValueError(f"bad --allow-http entry {raw!r}: {host} is not a destination")
    return Entry(host, port)


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



# ----------------------------------------------------------------- resolved addresses


def check_resolved(target: Target, entry: Entry, ip: IPAddress) -> None:
    """Refuse an address that `target`'s name resolved to, unless it may be reached."""
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

