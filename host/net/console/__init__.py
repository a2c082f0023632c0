"""The web console under /_wk/console (issue 28): its routes are added here."""

from __future__ import annotations

from aiohttp import web


def add_routes(app: web.Application) -> None:
    """Add the console's routes to the front door (none yet)."""
