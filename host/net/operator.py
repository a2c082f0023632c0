"""What the front door's own routes share: a plain-text answer, and who the caller is.

A request's bearer token names its caller (net/tokens.py): an operator acts and sees, a
reader only sees, an ingress's starts and reads instances of its own class alone.
`is_operator` is the check of a route that acts, `may_read` of one that shows; a token
none of the host's is refused (401) by both, a reader's at a route that acts with 403,
an ingress's at both, saying whose token it is.
"""

from __future__ import annotations

from urllib.parse import unquote

from aiohttp import web

from .tokens import INGRESS, Caller


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
    """Whether the request carries a token of this host's, an operator's or a reader's
    (an ingress's is refused, 403: it may only start and read its own class)."""
    caller = caller_of(request)
    if caller is not None and not caller.sees:
        raise web.HTTPForbidden(reason=read_only(caller))
    return caller is not None


def ingress_allows(caller: Caller, method: str, raw_path: str) -> bool:
    """Whether an ingress's token may send this request: a start (POST) or a status
    (GET or POST) of an instance of its own class, through wk-workflow/v1."""
    parts = raw_path.split("?", 1)[0].split("/", 3)
    if len(parts) < 4 or unquote(parts[1]) != caller.cls:
        return False
    route = parts[3]
    return (route == "wk-workflow/v1/start" and method == "POST") or (
        route == "wk-workflow/v1/status" and method in ("GET", "POST"))


def read_only(caller: Caller) -> str:
    if caller.role == INGRESS:
        return (f"the token {caller.name!r} is an ingress's: it may start instances of "
                f"class {caller.cls!r} and ask their status, nothing else")
    return f"the token {caller.name!r} is a reader's: it may look, not act"
