"""The console's sessions: a token of the host's (net/tokens.py), given once at the login,
exchanged for a cookie that says whose it was.

- The cookie holds no token: `v2.EXPIRES.NONCE.ROLE.NAME.MAC`, where NONCE is a random
  session id, ROLE and NAME the token's, and MAC an HMAC-SHA256 of the rest under a key
  derived from the admin token. Any process of `--processes N` checks it without asking
  the others (they share the admin token), and a new admin token ends every session at
  once. A reader's session sees and may not act.
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

from ..tokens import ROLES, Caller

COOKIE = "wk_console"
CSRF_HEADER = "x-wk-csrf"
PATH = "/_wk/console"
SESSION_S = 8 * 3600
_VERSION = "v2"


def _key(token: str) -> bytes:
    return hmac.new(token.encode(), b"wkhost console session key", hashlib.sha256).digest()


def _mac(token: str, text: str) -> str:
    return hmac.new(_key(token), text.encode(), hashlib.sha256).hexdigest()


def new_cookie(token: str, caller: Caller, now_s: float | None = None) -> str:
    """A fresh session's cookie value for `caller`, valid for SESSION_S."""
    expires = int(now_s if now_s is not None else time.time()) + SESSION_S
    text = f"{_VERSION}.{expires}.{secrets.token_hex(16)}.{caller.role}.{caller.name}"
    return f"{text}.{_mac(token, text)}"


def caller_in(token: str, cookie: str, now_s: float | None = None) -> Caller | None:
    """Whose session `cookie` is, if this host's token made it and it has not expired."""
    text, _, mac = cookie.rpartition(".")  # a name may hold dots: the MAC holds none
    parts = text.split(".", 4)
    if len(parts) != 5 or not mac:
        return None
    version, expires, nonce, role, name = parts
    if version != _VERSION or not expires.isdigit() or not nonce or role not in ROLES:
        return None
    if not hmac.compare_digest(mac.encode(), _mac(token, text).encode()):
        return None
    if int(expires) <= (now_s if now_s is not None else time.time()):
        return None
    return Caller(name, role)


def is_valid(token: str, cookie: str, now_s: float | None = None) -> bool:
    """Whether `cookie` is a session this host's token made, not yet expired."""
    return caller_in(token, cookie, now_s) is not None


def csrf_of(token: str, cookie: str) -> str:
    """The CSRF token of the session `cookie`."""
    return _mac(token, "csrf." + cookie)[:32]


def session_of(request: web.Request) -> str | None:
    """The request's valid session cookie, or None."""
    cookie = request.cookies.get(COOKIE, "")
    return cookie if cookie and is_valid(request.app["token"], cookie) else None


def caller_of_session(request: web.Request) -> Caller | None:
    """Whose the request's valid session is, or None."""
    cookie = request.cookies.get(COOKIE, "")
    return caller_in(request.app["token"], cookie) if cookie else None


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
    caller = caller_in(request.app["token"], cookie)
    if caller is not None and not caller.acts:
        return f"the session's token, {caller.name!r}, is a reader's: it may look, not act"
    if not same_origin(request):
        return "the request does not come from this host's console (Origin/Referer)"
    given = request.headers.get(CSRF_HEADER, "")
    if not given or not hmac.compare_digest(given.encode(),
                                            csrf_of(request.app["token"], cookie).encode()):
        return f"the CSRF token ({CSRF_HEADER}) is missing or wrong"
    return None
