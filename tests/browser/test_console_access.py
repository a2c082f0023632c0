"""The console's access, in a real browser: the login exchanges a token of the host's for a
session cookie (a wrong token refused), no token in any URL; without the session the
API answers 401 and a page goes to the login; an action needs the CSRF token and an
Origin of this host, and an operator's session: a reader's sees and cannot act."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import BrowserContext, expect

from tests.e2e.conftest import MakeServer
from tests.e2e.workflow_support import INTERNAL, Shop, waiting_for

from .console_support import WAIT_MS, console_url, log_in


def test_the_login_takes_the_admin_token_and_refuses_a_wrong_one(
        shop: Shop, context: BrowserContext) -> None:
    token = shop.server.token
    urls: list[str] = []
    page = context.new_page()
    page.on("request", lambda r: urls.append(r.url))

    page.goto(console_url(shop))
    assert page.url.startswith(console_url(shop, "/login")), page.url
    log_in(page, "not-the-" + token)
    expect(page.locator("#login-error")).to_have_text("That is not one of this host's tokens.")
    assert context.cookies() == []

    log_in(page, token)
    expect(page.locator("#classes")).to_be_visible(timeout=WAIT_MS)
    rows = page.locator("[data-testid=class-row]")
    expect(rows).to_have_count(3)
    orders = page.locator("[data-testid=class-row][data-cls=orders]")
    expect(orders).to_contain_text("workflow")
    expect(orders).to_contain_text("internal")
    expect(page.locator("[data-testid=class-row][data-cls=app]")).to_contain_text("actor")

    [cookie] = context.cookies()
    assert cookie["name"] == "wk_console" and cookie["httpOnly"], cookie
    assert cookie["sameSite"] == "Strict" and cookie["path"] == "/_wk/console", cookie
    assert token not in cookie["value"]
    assert not any(token in u for u in urls), urls

    page.click("#logout button")
    expect(page.locator("#token")).to_be_visible()
    assert context.cookies() == []
    page.goto(console_url(shop))
    assert page.url.startswith(console_url(shop, "/login")), page.url


def test_without_a_session_the_api_answers_401_and_a_page_goes_to_the_login(
        shop: Shop, context: BrowserContext) -> None:
    shop.app_start("w1", cool_off_ms=0)
    shop.drive("w1", waiting_for("approved"))
    api = context.request
    for name in ("classes", "actors?cls=orders", "instance?cls=orders&id=w1",
                 "audit?target=orders/w1"):
        resp = api.get(console_url(shop, f"/api/{name}"))
        assert resp.status == 401, (name, resp.status, resp.text())
        assert "log in" in resp.json()["error"]
    context.add_cookies([{"name": "wk_console", "value": "v1.99999999999.00.forged",
                          "url": console_url(shop, "/")}])
    assert api.get(console_url(shop, "/api/classes")).status == 401

    page = context.new_page()
    page.goto(console_url(shop, "/instance?cls=orders&id=w1"))
    assert page.url.startswith(console_url(shop, "/login?next=")), page.url
    log_in(page, shop.server.token)  # and on to the page asked for
    expect(page.locator("#summary [data-testid=state]")).to_have_text("waiting",
                                                                        timeout=WAIT_MS)
    assert page.url == console_url(shop, "/instance?cls=orders&id=w1")


def test_an_action_needs_the_csrf_token_and_this_hosts_origin(
        shop: Shop, context: BrowserContext) -> None:
    shop.app_start("w1", cool_off_ms=0)
    shop.drive("w1", waiting_for("approved"))
    page = context.new_page()
    page.goto(console_url(shop))
    log_in(page, shop.server.token)
    expect(page.locator("#classes")).to_be_visible(timeout=WAIT_MS)
    csrf = page.locator("meta[name=wk-csrf]").get_attribute("content")
    assert csrf

    action = json.dumps({"cls": "orders", "id": "w1", "action": "terminate"})
    url, origin = console_url(shop, "/api/action"), shop.server.url
    refused = [
        ({"Origin": origin}, "CSRF token"),  # the cookie alone
        ({"Origin": origin, "x-wk-csrf": "0" * 32}, "CSRF token"),
        ({"Origin": "http://evil.example", "x-wk-csrf": csrf}, "Origin"),
    ]
    for headers, why in refused:
        resp = context.request.post(url, data=action,
                                    headers={"Content-Type": "application/json", **headers})
        assert resp.status == 403, (headers, resp.status, resp.text())
        assert why in resp.json()["error"], resp.json()
    assert shop.status("w1")["state"] == "waiting"
    assert _audit(shop, "orders/w1") == []

    resp = context.request.post(url, data=action, headers={
        "Content-Type": "application/json", "Origin": origin, "x-wk-csrf": csrf})
    assert resp.status == 200, resp.text()
    assert resp.json()["answer"]["state"] == "terminated"
    assert [(e["action"], e["note"], e["who"]) for e in _audit(shop, "orders/w1")] == [
        ("terminate", "console", "admin")]


READER = "rita-secret-0123456789"


@pytest.fixture
def read_only_shop(make_server: MakeServer, workflow_wasm: dict[str, Path],
                   tmp_path: Path) -> Shop:
    tokens = tmp_path / "tokens"
    tokens.write_text(f"rita reader {READER}\n")
    actors = {name: workflow_wasm[name] for name in ("orders", "ledger", "app")}
    return Shop(make_server(actors=actors, access=INTERNAL, data=tmp_path / "data",
                            extra=["--tokens-file", str(tokens)]))


def test_a_readers_session_sees_and_cannot_act(read_only_shop: Shop,
                                               context: BrowserContext) -> None:
    shop = read_only_shop
    shop.app_start("w1", cool_off_ms=0)
    shop.drive("w1", waiting_for("approved"))
    page = context.new_page()
    page.goto(console_url(shop, "/instance?cls=orders&id=w1"))
    log_in(page, READER)
    expect(page.locator("#summary [data-testid=state]")).to_have_text("waiting",
                                                                        timeout=WAIT_MS)
    expect(page.locator("#who")).to_have_text("rita (reader)")
    expect(page.locator("#actions")).to_have_text("Read-only: this session's token is a "
                                                  "reader's.")
    expect(page.locator("#actions button")).to_have_count(0)

    csrf = page.locator("meta[name=wk-csrf]").get_attribute("content")
    resp = context.request.post(  # as the page would, had it offered the move
        console_url(shop, "/api/action"),
        data=json.dumps({"cls": "orders", "id": "w1", "action": "terminate"}),
        headers={"Content-Type": "application/json", "Origin": shop.server.url,
                 "x-wk-csrf": csrf or ""})
    assert resp.status == 403, resp.text()
    assert resp.json()["error"] == ("the session's token, 'rita', is a reader's: it may "
                                    "look, not act")
    assert shop.status("w1")["state"] == "waiting" and _audit(shop, "orders/w1") == []


def _audit(shop: Shop, target: str) -> list[dict[str, Any]]:
    """The audit log's rows for `target`, read as an operator with the token."""
    status, _, body = shop.server.request("GET", f"/_wk/audit?target={target}",
                                          operator=True)
    assert status == 200, body
    entries: list[dict[str, Any]] = json.loads(body)["entries"]
    return entries
