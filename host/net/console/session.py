"""The console's sessions: the admin token, given once at the login, exchanged for a cookie.

- The cookie holds no token: `v1.EXPIRES.NONCE.MAC`, where NONCE is a random session id
  and MAC an HMAC-SHA256 of the rest under a key derived from the admin token. Any
  process of `--processes N` checks it without asking the others (they share the token),
  and a new admin token ends every session at once.
- It is HttpOnly (no script reads it), SameSite=Strict, Path=/_wk/console, Secure when
  the request came over TLS; it lasts SESSION_S (8 hours). A logout clears it in the
  browser; a copy taken before then stays valid until it expires, as no process keeps a
  list of the sessions it has ended.
- Each action also needs the session's CSRF token in the `x-wk-csrf` header (an HMAC of
  the cookie: no state kept, the same in every process), and an Origin (or, without one,
  a Referer) of this host. A read needs only the cookie.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from urllib.parse import urlsplit

from aiohttp import web

COOKIE = "wk_console"
CSRF_HEADER = "x-wk-csrf"
PATH = "/_wk/console"
SESSION_S = 8 * 3600
_VERSION = "v1"


def _key(token: str) -> bytes:
    return hmac.new(token.encode(), b"wkhost console session key", hashlib.sha256).digest()


def _mac(token: str, text: str) -> str:
    return hmac.new(_key(token), text.encode(), hashlib.sha256).hexdigest()


def new_cookie(token: str, now_s: float | None = None) -> str:
    """A fresh session's cookie value, valid for SESSION_S."""
    expires = int(now_s if now_s is not None else time.time()) + SESSION_S
    text = f"{_VERSION}.{expires}.{secrets.token_hex(16)}"
    return f"{text}.{_mac(token, text)}"


def is_valid(token: str, cookie: str, now_s: float | None = None) -> bool:
    """Whether `cookie` is a session this host's token made, not yet expired."""
    version, _, rest = cookie.partition(".")
    expires, _, rest = rest.partition(".")
    nonce, _, mac = rest.partition(".")
    if version != _VERSION or not expires.isdigit() or not nonce or not mac:
        return False
    expected = _mac(token, f"{version}.{expires}.{nonce}")
    if not hmac.compare_digest(mac.encode(), expected.encode()):
        return False
    return int(expires) > (now_s if now_s is not None else time.time())


def csrf_of(token: str, cookie: str) -> str:
    """The CSRF token of the session `cookie`."""
    return _mac(token, "csrf." + cookie)[:32]


def token_matches(given: str, token: str) -> bool:
    return hmac.compare_digest(given.strip().encode(), token.encode())


def session_of(request: web.Request) -> str | None:
    """The request's valid session cookie, or None."""
    cookie = request.cookies.get(COOKIE, "")
    return cookie if cookie and is_valid(request.app["token"], cookie) else None


def same_origin(request: web.Request) -> bool:
    """Whether the request says it comes from a page of this host (Origin, else Referer)."""
    origin = request.headers.get("Origin") or request.headers.get("Referer") or ""
    parts = urlsplit(origin)
    return bool(parts.netloc) and parts.netloc == request.host and \
        parts.scheme == request.scheme


def set_cookie(request: web.Request, resp: web.StreamResponse, value: str) -> None:
    resp.set_cookie(COOKIE, value, max_age=SESSION_S, path=PATH, httponly=True,
                    samesite="Strict", secure=request.secure)


def clear_cookie(resp: web.StreamResponse) -> None:
    resp.del_cookie(COOKIE, path=PATH)


def refusal(request: web.Request) -> str | None:
    """Why an action is refused (no session, a wrong or missing CSRF token, another
    origin), or None: it may go on."""
    cookie = session_of(request)
    if cookie is None:
        return "no session: log in to the console"
    if not same_origin(request):
        return "the request does not come from this host's console (Origin/Referer)"
    given = request.headers.get(CSRF_HEADER, "")
    if not given or not hmac.compare_digest(given.encode(),
                                            csrf_of(request.app["token"], cookie).encode()):
        return f"the CSRF token ({CSRF_HEADER}) is missing or wrong"
    return None
