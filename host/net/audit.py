"""The audit log of operator actions (being built: its middleware and routes)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def add_routes(app: web.Application) -> None:
    """The audit log's routes (none yet)."""


@web.middleware
async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Records each operator action as it is answered (not yet: passes it through)."""
    return await handler(request)
