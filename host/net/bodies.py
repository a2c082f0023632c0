"""A client's request body at the front door: read whole, within its cap and its time
(net/frontdoor.py), and `Expect: 100-continue` answered with the cap in mind."""

from __future__ import annotations

import asyncio
import logging

from aiohttp import HttpVersion11, web
from aiohttp.http_exceptions import HttpProcessingError

from ..errors import BadRequest, HostError, TooLarge
from .operator import plain

log = logging.getLogger("wkhost.http")


class SlowClient(HostError):
    """The request's body did not arrive within the body timeout."""

    kind = "SlowClient"

    http_status = 408


async def read_body(request: web.Request) -> bytes:
    """The request's body, whole, or a refusal: 413 for a declared length over the cap
    (before any of the body is read), 408 for one that takes over the body timeout, 400
    for one cut short, its client gone (one line in the log)."""
    cap: int = request.app["body_cap"]
    declared = request.content_length
    if declared is not None and declared > cap:
        raise TooLarge(f"the body ({declared} bytes declared) is over the {cap}-byte cap")
    timeout_s = request.app["host"].config.body_timeout_s
    try:
        async with asyncio.timeout(timeout_s):
            return await request.read()
    except TimeoutError:
        log.info("%s %s: the body did not arrive within %g s; connection closed",
                 request.method, request.path, timeout_s)
        raise SlowClient(f"the body did not arrive within {timeout_s:g} s") from None
    except (ConnectionError, web.RequestPayloadError, HttpProcessingError) as e:
        log.info("%s %s: the body did not arrive whole (%s: %s)", request.method,
                 request.path, type(e).__name__, e)
        raise BadRequest("the body did not arrive whole") from None


async def expect_handler(request: web.Request) -> web.StreamResponse | None:
    """`Expect: 100-continue`, as aiohttp's own handler answers it, except that a declared
    body over the cap gets its 413 instead of an invitation to send it."""
    declared = request.content_length
    if declared is not None and declared > request.app["body_cap"]:
        return plain(413, f"the body ({declared} bytes declared) is over the "
                          f"{request.app['body_cap']}-byte cap")
    if request.version != HttpVersion11:
        return None
    expect = request.headers.get("Expect", "")
    if expect.lower() != "100-continue":
        return plain(417, f"unknown Expect: {expect}")
    await request.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
    request.writer.output_size = 0  # the answer proper has not started
    return None
