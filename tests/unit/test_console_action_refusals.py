"""The console's operator routes, its actions (host/net/console/actions.py) and its
compatibility report (compat.py), refuse before anything runs (api.py's `refused`): 401
for a request without a valid session (log in), 403 for one whose session may not act
(another origin, no or a wrong CSRF token). The status follows the session, never the
words of the refusal. A real aiohttp server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import warnings
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from wkhost.net.console import actions, api, compat, session
from wkhost.net.tokens import Caller, Tokens

TOKEN = "the-admin-token"
ROUTES = {"action": {"cls": "orders", "id": "1", "action": "pause"},
          "compat": {"cls": "orders", "wasm": "/nowhere/new.wasm"}}


def answers(cookie: str | None, headers: dict[str, str], route: str = "action"
            ) -> tuple[int, Any]:
    async def run() -> tuple[int, Any]:
        app = web.Application()
        with warnings.catch_warnings():  # the host keys its app by text, as the front door
            warnings.simplefilter("ignore", web.NotAppKeyWarning)
            app["token"] = TOKEN
            app["tokens"] = Tokens(TOKEN)
        actions.add_routes(app, session.PATH)
        compat.add_routes(app, session.PATH)
        async with TestClient(TestServer(app, host="127.0.0.1")) as client:
            if cookie is not None:
                client.session.cookie_jar.update_cookies({session.COOKIE: cookie})
            origin = str(client.make_url("/")).rstrip("/")
            sent = {k: v.replace("ORIGIN", origin) for k, v in headers.items()}
            resp = await client.post(f"{session.PATH}/api/{route}", json=ROUTES[route],
                                     headers=sent)
            return resp.status, await resp.json()
    return asyncio.run(run())


ADMIN = Caller("admin", "operator")
GOOD = session.new_cookie(TOKEN, ADMIN)
CSRF = {"Origin": "ORIGIN", session.CSRF_HEADER: session.csrf_of(TOKEN, GOOD)}


@pytest.mark.parametrize("route", sorted(ROUTES))
@pytest.mark.parametrize(("cookie", "headers", "status"), [
    (None, CSRF, 401),
    (session.new_cookie("another-hosts-token", ADMIN), CSRF, 401),
    (GOOD, {session.CSRF_HEADER: CSRF[session.CSRF_HEADER]}, 403),  # no Origin
    (GOOD, {"Origin": "ORIGIN"}, 403),  # no CSRF token
    (GOOD, {"Origin": "ORIGIN", session.CSRF_HEADER: "0" * 32}, 403),
], ids=["no-cookie", "not-this-hosts", "no-origin", "no-csrf", "wrong-csrf"])
def test_an_action_is_refused_401_without_a_session_else_403(
        cookie: str | None, headers: dict[str, str], status: int, route: str) -> None:
    got, doc = answers(cookie, headers, route)
    assert got == status, doc
    assert doc["error"]


def test_the_status_follows_the_session_not_the_words(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(api, "refusal", lambda request: "log in first, please")
    assert answers(None, CSRF)[0] == 401
    monkeypatch.setattr(api, "refusal", lambda request: "no session: or so it says")
    assert answers(GOOD, CSRF)[0] == 403
