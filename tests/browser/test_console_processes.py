"""The console with `wkhost serve --processes 2`: a session made by whichever process
took the login is good in the other too (the cookie is an HMAC, no state shared), and
the console reaches, lists and moves the instances of both processes; each move is in
the audit log."""

from __future__ import annotations

import json
from pathlib import Path

from playwright.sync_api import BrowserContext, expect
from wkhost.partition import Partition

from tests.e2e.conftest import MakeServer
from tests.e2e.workflow_support import INTERNAL, Shop, waiting_for

from .console_support import WAIT_MS, console_url, log_in

ROUNDS = 10  # reads, each on a fresh connection: the kernel spreads them over both


def test_two_processes_share_sessions_and_every_instance(
        make_server: MakeServer, workflow_wasm: dict[str, Path], tmp_path: Path,
        context: BrowserContext) -> None:
    actors = {k: workflow_wasm[k] for k in ("orders", "ledger", "app")}
    shop = Shop(make_server(actors=actors, access=INTERNAL, data=tmp_path / "data",
                            extra=["--processes", "2"]))
    ids = ["w1", "w2", "w3", "w4"]
    owners = {Partition(0, 2).owner(i) for i in ids}
    assert owners == {0, 1}, "the ids must land on both processes"
    for oid in ids:
        shop.app_start(oid, cool_off_ms=0)
        shop.drive(oid, waiting_for("approved"))

    page = context.new_page()
    page.goto(console_url(shop, "/class?cls=orders"))
    log_in(page, shop.server.token)
    expect(page.locator("[data-testid=actor-row]")).to_have_count(4, timeout=WAIT_MS)
    csrf = page.locator("meta[name=wk-csrf]").get_attribute("content") or ""

    api = context.request
    for _ in range(ROUNDS):
        doc = api.get(console_url(shop, "/api/actors?cls=orders&count=1"),
                      headers={"Connection": "close"}).json()
        assert doc["count"] == 4 and doc["ids"] == ids, doc
    for oid in ids:
        doc = api.get(console_url(shop, f"/api/instance?cls=orders&id={oid}")).json()
        assert doc["status"]["state"] == "waiting", doc
        resp = api.post(console_url(shop, "/api/action"), headers={
            "Content-Type": "application/json", "Origin": shop.server.url, "x-wk-csrf": csrf,
        }, data=json.dumps({"cls": "orders", "id": oid, "action": "pause"}))
        assert resp.status == 200 and resp.json()["answer"]["state"] == "paused", resp.text()
        assert shop.status(oid)["state"] == "paused"

    status, _, body = shop.server.request("GET", "/_wk/audit?target=orders&action=pause",
                                          operator=True)
    assert status == 200, body
    rows = json.loads(body)["entries"]
    assert sorted((e["actor_id"], e["status"], e["note"]) for e in rows) == [
        (oid, 200, "console") for oid in ids], rows
