"""The console's pages: the login, the logout and the page the views run in.

    GET  /_wk/console/login            the login form
    POST /_wk/console/login            token=<a token of the host's> (a form's body, never
                                       the URL): the session's cookie, then on to the console
    POST /_wk/console/logout           the cookie cleared
    GET  /_wk/console[/|/class|/instance|/audit|/schedules]
                                       the console (its views: static/app.js), or,
                                       without a session, a redirect to the login
    GET  /_wk/console/static/...       its scripts and style (no secret in them)

A page carries its session's CSRF token in a <meta> tag, for the scripts' actions, and
whose session it is (the name and the role of the token it began with).
"""

from __future__ import annotations

import html
import logging
from pathlib import Path
from urllib.parse import quote

from aiohttp import web

from . import session

log = logging.getLogger("wkhost.console")

STATIC = Path(__file__).parent / "static"
VIEWS = ("", "/", "/class", "/instance", "/audit", "/schedules")
_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; "
                               "frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
    "X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin", "Cache-Control": "no-store",
}


def add_routes(app: web.Application, prefix: str) -> None:
    app.router.add_get(f"{prefix}/login", _login_form)
    app.router.add_post(f"{prefix}/login", _login)
    app.router.add_post(f"{prefix}/logout", _logout)
    for view in VIEWS:
        app.router.add_get(prefix + view, _view)
    app.router.add_static(f"{prefix}/static", STATIC)


def _page(name: str, status: int = 200, **fields: str) -> web.Response:
    text = (STATIC / name).read_text()
    for key, value in fields.items():
        text = text.replace("{{" + key + "}}", html.escape(value))
    return web.Response(status=status, text=text, content_type="text/html",
                        headers=_HEADERS)


def _see_other(location: str) -> web.Response:
    """A redirect, returned: the front door's error middleware would answer a raised
    one as plain text, without its Location and cookie."""
    return web.Response(status=303, headers={"Location": location, **_HEADERS})


def _next_of(target: str) -> str:
    """Where a login goes on to: a page of the console, nothing else."""
    path = target.split("?", 1)[0]
    ok = path in {session.PATH + v for v in VIEWS} and "//" not in target
    return target if ok else session.PATH


async def _login_form(request: web.Request) -> web.StreamResponse:
    nxt = _next_of(request.query.get("next", ""))
    if session.session_of(request) is not None:
        return _see_other(nxt)
    return _page("login.html", message="", next=nxt)


async def _login(request: web.Request) -> web.StreamResponse:
    form = await request.post()
    nxt = _next_of(str(form.get("next", "")))
    if not session.same_origin(request):
        return _page("login.html", 403, next=nxt,
                     message="The login must come from this host's own login page.")
    given = form.get("token", "")
    caller = request.app["tokens"].who(given) if isinstance(given, str) else None
    if caller is None:
        log.info("console: a login with a wrong token, from %s", request.remote)
        return _page("login.html", 401, next=nxt,
                     message="That is not one of this host's tokens.")
    if not caller.sees:  # an ingress's token: its class's starts and statuses alone
        return _page("login.html", 403, next=nxt,
                     message="That token is an ingress's: it opens no console.")
    log.info("console: %s (%s) logged in, from %s", caller.name, caller.role, request.remote)
    resp = _see_other(nxt)
    session.set_cookie(request, resp, session.new_cookie(request.app["token"], caller))
    return resp


async def _logout(request: web.Request) -> web.StreamResponse:
    if not session.same_origin(request):
        return web.Response(status=403, text="a logout must come from the console\n")
    resp = _see_other(f"{session.PATH}/login")
    session.clear_cookie(resp)
    return resp


async def _view(request: web.Request) -> web.StreamResponse:
    cookie = session.session_of(request)
    caller = session.caller_of_session(request)
    if cookie is None or caller is None:
        return _see_other(f"{session.PATH}/login?next={quote(request.path_qs, safe='')}")
    return _page("app.html", csrf=session.csrf_of(request.app["token"], cookie),
                 who=caller.name, role=caller.role)
