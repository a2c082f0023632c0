"""What the front door's own routes share: a plain-text answer, and the operator's check."""

from __future__ import annotations

import hmac

from aiohttp import web


def plain(status: int, reason: str, **headers: str) -> web.Response:
    resp = web.Response(status=status, text=reason.rstrip("\n") + "\n", headers=headers)
    if status in (408, 413):  # the body is left unread, or half read: the connection
        resp.force_close()    # cannot carry another request
    return resp


def is_operator(request: web.Request) -> bool:
    auth = request.headers.get("Authorization", "")
    if not auth.startswith("Bearer "):
        return False
    if hmac.compare_digest(auth[7:].strip().encode(), request.app["token"].encode()):
        return True
    raise web.HTTPUnauthorized(reason="the bearer token is not this host's admin token")
