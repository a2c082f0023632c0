"""`POST /_wk/clock/advance?ms=N[&settle_ms=M]`: move a test host's fake clock (a host
started with --fake-clock; an operator's), and on every process of it; with settle_ms,
wait until what came due has run. The answer says the new time and, where one process
has every alarm, when the next one is due (a test kit skips time to it)."""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import web

from ..errors import BadRequest
from .operator import is_operator, plain
from .peers import advance_clock


def add_routes(app: web.Application) -> None:
    app.router.add_post("/_wk/clock/advance", _advance)


async def _advance(request: web.Request) -> web.Response:
    testing = request.app["host"].testing
    if testing.fake_clock is None:
        return plain(404, "the clock moves only on a host started with --fake-clock")
    if not is_operator(request):
        return plain(403, "moving the clock is for operators")
    try:
        ms = int(request.query["ms"])
        settle_ms = int(request.query.get("settle_ms", "0"))
    except (KeyError, ValueError):
        raise BadRequest("give ?ms=N (and optionally &settle_ms=M), whole numbers of "
                         "milliseconds") from None
    if settle_ms < 0:
        raise BadRequest("settle_ms must be 0 or more")
    now = testing.advance_clock(ms)
    host = request.app["host"]
    scheduler = host.scheduler
    # A test kit skips time to the next alarm: told where one process has them all.
    alone = host.config.partition.count == 1
    if not settle_ms:
        await advance_clock(request.app, now)  # the other processes' clocks, if any
        return web.json_response({"now": now, **_next_alarm(scheduler, alone)})
    # Every process waits at once, each up to settle_ms, for what came due there.
    there, here = await asyncio.gather(
        advance_clock(request.app, now, settle_ms),
        asyncio.to_thread(scheduler.wait_settled, settle_ms / 1000))
    return web.json_response({"now": now, "settled": there and here,
                              **_next_alarm(scheduler, alone)})


def _next_alarm(scheduler: Any, alone: bool) -> dict[str, int | None]:
    return {"next_alarm": scheduler.next_due()} if alone else {}
