"""The web console under /_wk/console, served by `wkhost serve` itself.

- pages.py: the login (the admin token exchanged for a session cookie), the logout,
  the page the views run in, the static files (plain HTML, CSS and ES modules in
  static/: no build step; they ship in the wheel).
- session.py: the cookie and the CSRF token, checked by every process alike.
- api.py: the reads, as JSON (classes, listing, an instance, a query, the audit log).
- actions.py: an operator's moves on an instance, each written to the audit log.
- compat.py: the compatibility report of a class's live instances with a new build.
- calls.py: wk-workflow/v1 into an instance, as the operator.

The front door's other processes (`for_peers`, on their Unix sockets) serve no console.
"""

from __future__ import annotations

from aiohttp import web

from . import actions, api, compat, pages
from .session import PATH


def add_routes(app: web.Application) -> None:
    """Add the console's routes to the front door (not to the app the processes of
    `--processes N` serve each other)."""
    if app["for_peers"]:
        return
    api.add_routes(app, PATH)
    actions.add_routes(app, PATH)
    compat.add_routes(app, PATH)
    pages.add_routes(app, PATH)
