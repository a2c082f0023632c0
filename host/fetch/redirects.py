"""The redirects a guest's fetch follows, and what it sends on to their targets.

301, 302, 303, 307 and 308 with a Location are followed, at most `policy.max_redirects`
times; one more is refused as "denied". 303 (except for HEAD), and 301/302 after a POST,
become a GET without body or Content-* headers. When the origin (scheme, host, port)
changes, Authorization, Proxy-Authorization and Cookie are dropped. The body of a
followed redirect is not read. Every target is admitted as the first URL was
(host/fetch/policy.py's `admit`, with `via`).
"""

from __future__ import annotations

from .policy import Target

REDIRECTS = frozenset({301, 302, 303, 307, 308})
_CREDENTIAL_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie"})


def location(status: int, headers: list[tuple[str, str]]) -> str | None:
    """Where an answer redirects to, if it is a redirect to follow."""
    if status not in REDIRECTS:
        return None
    return next((v for n, v in headers if n == "location" and v), None)


def redirected(
    status: int, method: str, headers: list[tuple[str, str]], body: bytes
) -> tuple[str, list[tuple[str, str]], bytes]:
    """The request to send to a redirect's target (RFC 9110 15.4, as browsers do)."""
    if (status == 303 and method != "HEAD") or (status in (301, 302) and method == "POST"):
        kept = [(n, v) for n, v in headers if not n.lower().startswith("content-")]
        return "GET", kept, b""
    return method, headers, body


def for_origin(
    headers: list[tuple[str, str]], before: Target, after: Target
) -> list[tuple[str, str]]:
    """The headers to send on to `after`: no credentials to another origin."""
    if after.origin == before.origin:
        return headers
    return [(n, v) for n, v in headers if n.lower() not in _CREDENTIAL_HEADERS]
