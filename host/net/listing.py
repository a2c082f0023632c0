"""Listing a class's actors for operators: `/_wk/actors/{cls}`, across every process."""

from __future__ import annotations

from aiohttp import web

from ..errors import BadRequest
from .operator import is_operator, plain
from .peers import list_actors as list_from_every_process


def add_routes(app: web.Application) -> None:
    app.router.add_get("/_wk/actors/{cls}", _list_actors)


async def _list_actors(request: web.Request) -> web.Response:
    if not is_operator(request):
        return plain(403, "listing actors is for operators (send the admin token)")
    after = request.query.get("after", "")
    try:
        limit = min(10_000, int(request.query.get("limit", "1000")))
    except ValueError:
        raise BadRequest("limit must be a whole number") from None
    ids = await list_from_every_process(request.app, request.match_info["cls"], after, limit)
    return web.json_response({"ids": ids})
