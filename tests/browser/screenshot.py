"""The console's screenshots in the docs (docs/images/): the instance page of the demo's
order (two failed charges, a pack cut by a trap), approved from the console, its second
charge attempt chosen on the timeline (console-instance.png); and the class's page of
the orders, several states at once, with when each started, ended and ran
(console-class.png).

    .venv/bin/python -m tests.browser.screenshot [OUT_DIR]

It runs what the browser tests run: `wkhost serve` on 127.0.0.1 with a fake clock, and
Debian's chromium through Playwright (tests/browser/setup_chromium.sh installs it).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from playwright.sync_api import expect, sync_playwright
from wkhost.engine.build import cached_build

from tests.conftest import CACHE_DIR, guest_source
from tests.e2e.server import REPO, Server
from tests.e2e.workflow_support import INTERNAL, SOURCES, Shop, finished, waiting_for

from .console_support import WAIT_MS, browser, console_url, log_in

OUT = REPO / "docs" / "images"


def main(out: Path) -> None:
    wasm = {name: cached_build(guest_source(SOURCES[name]), CACHE_DIR)
            for name in ("orders", "ledger", "app")}
    with tempfile.TemporaryDirectory() as tmp:
        server = Server(Path(tmp) / "data", wasm, access=INTERNAL).start()
        try:
            shoot(Shop(server), Path(tmp), out)
        finally:
            server.stop()


def shoot(shop: Shop, tmp: Path, out: Path) -> None:
    shop.app_start("order-42", cool_off_ms=0, charge_failures=2, trap_in_pack=True)
    shop.drive("order-42", waiting_for("approved"))
    for oid in ("order-43", "order-44"):
        shop.app_start(oid, cool_off_ms=0)
        shop.drive(oid, waiting_for("approved"))
    assert shop.wk("order-44", "terminate", {"reason": "customer left"})[0] == 200
    with sync_playwright() as p, browser(p, tmp / "profile") as ctx:
        page = ctx.new_page()
        page.goto(console_url(shop, "/instance?cls=orders&id=order-42"))
        log_in(page, shop.server.token)
        page.click("#action-event")
        page.fill("#arg-name", "approved")
        page.fill("#arg-payload", '{"by": "ann"}')
        page.fill("#confirm-note", "approved by phone")
        page.click("#confirm-yes")
        shop.drive("order-42", finished)
        state = page.locator("#summary [data-testid=state]")
        expect(state).to_have_text("completed", timeout=WAIT_MS)
        page.locator("[data-testid=lane][data-step=charge] [data-testid=attempt]").nth(1).click()
        page.screenshot(path=str(out / "console-instance.png"), full_page=True)
        page.goto(console_url(shop, "/class?cls=orders&status=completed,terminated,waiting"))
        expect(page.locator("[data-testid=actor-row]")).to_have_count(3, timeout=WAIT_MS)
        page.screenshot(path=str(out / "console-class.png"), full_page=True)
    print(f"wrote {out}/console-instance.png and console-class.png")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT)
