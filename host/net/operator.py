"""What the front door's own routes share: a plain-text answer, and who the caller is.

A request's bearer token names its caller (net/tokens.py): an operator acts and sees, a
reader only sees. `is_operator` is the check of a route that acts, `may_read` of one
that shows; a token none of the host's is refused (401) by both, a reader's at a route
that acts with 403, saying whose token it is.
"""

from __future__ import annotations

from aiohttp import web

from .tokens import Caller


def plain(status: int, reason: str, **headers: str) -> web.Response:
    resp = web.Response(status=status, text=reason.rstrip("\n") + "\n", headers=headers)
    if status in (408, 413):  # the body is left unread, or half read: the connection
        resp.force_close()    # cannot carry another request
    return resp


def caller_of(request: web.Request) -> Caller | None:
    """The caller the request's bearer token names; None without one."""
    auth = request.headers.get("Authorization", "")
    if not auth.startswith("Bearer "):
        return None
    caller: Caller | None = request.app["tokens"].who(auth[7:])
    if caller is None:
        raise web.HTTPUnauthorized(
            reason="the bearer token is not this host's admin token, nor one of its named "
            "tokens")
    return caller


def is_operator(request: web.Request) -> bool:
    """Whether the request carries an operator's token (a reader's is refused, 403)."""
    caller = caller_of(request)
    if caller is None:
        return False
    if not caller.acts:
        raise web.HTTPForbidden(reason=read_only(caller))
    return True


def may_read(request: web.Request) -> bool:
    """Whether the request carries a token of this host's, an operator's or a reader's."""
    return caller_of(request) is not None


def read_only(caller: Caller) -> str:
    return f"the token {caller.name!r} is a reader's: it may look, not act"
