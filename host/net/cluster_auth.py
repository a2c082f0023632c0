"""What the nodes of a cluster pass each other is authenticated with the cluster's
shared secret (`--cluster-secret-file`).

A passed request carries `wk-cluster-auth: TIME.MAC`, where MAC is HMAC-SHA256 keyed by
the secret over the time, the method, the target and the body's sha256. The secret
itself never travels, and a header seen is good for `_WINDOW_S` on that one request
only (the same method, target and body: a replay within the window is not caught). A request
with the header is a hop from another node: it is served here or refused, never passed
on again (one hop). The `/_wk/peer/...` routes, which trust what they are told (an
actor as the sender, the chain of calls), need the header.
"""

from __future__ import annotations

import hashlib
import hmac
import time

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError

HEADER = "wk-cluster-auth"
_WINDOW_S = 300.0  # the nodes' clocks agree to well within this


def sign(secret: bytes, method: str, target: str, body: bytes = b"",
         now: float | None = None) -> str:
    at = str(int(now if now is not None else time.time()))
    return f"{at}.{_mac(secret, at, method, target, body)}"


def verify(secret: bytes, value: str, method: str, target: str, body: bytes = b"",
           now: float | None = None) -> bool:
    at, _, mac = value.partition(".")
    if not at.isdigit():
        return False
    if abs((now if now is not None else time.time()) - int(at)) > _WINDOW_S:
        return False
    return hmac.compare_digest(mac, _mac(secret, at, method, target, body))


def _mac(secret: bytes, at: str, method: str, target: str, body: bytes) -> str:
    msg = f"{at}\n{method.upper()}\n{target}\n{hashlib.sha256(body).hexdigest()}"
    return hmac.new(secret, msg.encode("utf-8", "surrogateescape"),
                    hashlib.sha256).hexdigest()


def is_hop(request: web.Request) -> bool:
    """Passed on by another node (its header checked by `middleware`)."""
    return bool(request.get("cluster_hop"))


def middleware(secret: bytes) -> web.middleware:  # type: ignore[valid-type]
    @web.middleware
    async def checked(request: web.Request, handler):  # type: ignore[no-untyped-def]
        value = request.headers.get(HEADER)
        if value is not None:
            try:
                body = await request.read()  # kept by aiohttp for the handler
            except (ConnectionError, web.RequestPayloadError, HttpProcessingError):
                # The passing node gave up before it sent the body (it asked another
                # node: net/cluster_door.py): nothing to run, and no one to answer.
                return web.Response(status=400, text="the body did not arrive whole\n")
            if not verify(secret, value, request.method, request.raw_path, body):
                return web.Response(status=403, text="wk-cluster-auth does not verify\n")
            request["cluster_hop"] = True
        elif request.path.startswith("/_wk/peer/"):
            return web.Response(status=403, text="only the cluster's nodes may ask this\n")
        return await handler(request)

    return checked
