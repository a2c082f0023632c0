"""Prometheus metrics at /_wk/metrics (issue 28): the route is added here."""

from __future__ import annotations

from aiohttp import web


def add_routes(app: web.Application) -> None:
    """Add the metrics route to the front door (none yet)."""
